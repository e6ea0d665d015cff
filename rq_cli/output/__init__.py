"""What rq-cli prints: one place decides the format (``render``); tables fitted to the
terminal (``tables``), the progress line (``progress``), the one JSON encoder
(``jsonlines``), each result's JSON shape (``shapes``), thresholds, rates and Prometheus
text (``metrics``).
"""
