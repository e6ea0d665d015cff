"""Fitting a tab's columns to the terminal (rq_cli/dash/layout.py): the error and the data
get the room, the less useful columns go first."""

from __future__ import annotations

from rq_cli.dash.layout import PADDING, Fit, cut, fit_columns
from rq_cli.dash.rows import TAB_COLUMNS, TAB_FITS

NATURAL = {"": 1, "id": 36, "attempts": 8, "dead for": 8, "reason": 6, "error": 70, "data": 80}


def used(widths):
    return sum(w + 2 * PADDING for w in widths.values())


def test_a_wide_terminal_keeps_every_column_and_shows_errors_whole():
    widths = fit_columns(TAB_COLUMNS["dead"], NATURAL, 200, TAB_FITS["dead"])
    assert list(widths) == list(TAB_COLUMNS["dead"])
    assert widths["error"] == 70 and used(widths) <= 200


def test_a_narrow_terminal_drops_attempts_and_reasons_before_cutting_the_error():
    for width in (78, 98):
        widths = fit_columns(TAB_COLUMNS["dead"], NATURAL, width, TAB_FITS["dead"])
        assert "attempts" not in widths and "reason" not in widths
        assert widths["error"] >= 30 and widths["data"] >= 20
        assert used(widths) <= width


def test_short_cells_keep_their_columns_and_take_no_more_room_than_they_need():
    natural = {**NATURAL, "id": 5, "error": 9, "data": 23}
    widths = fit_columns(TAB_COLUMNS["dead"], natural, 78, TAB_FITS["dead"])
    assert widths == {"": 1, "id": 5, "attempts": 8, "dead for": 8, "reason": 6, "error": 9,
                      "data": 23}


def test_a_narrowed_column_is_cut_with_an_ellipsis():
    widths = fit_columns(("id", "data"), {"id": 40, "data": 50}, 40,
                         Fit({"data": (20, 1)}, (("id", 10),)))
    assert widths == {"id": 10, "data": 26}
    assert cut("0f3c9a7e-0000-4b1e", 10) == "0f3c9a7e-…" and cut("short", 10) == "short"
