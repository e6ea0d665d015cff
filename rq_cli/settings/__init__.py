"""The config file: discovery and resolution of a queue name (``config``), the keys and their
checks (``rules``), where in the file a bad key is (``tomlspots``).
"""
