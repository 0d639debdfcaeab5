"""A table drawn on a page: its notes sit below it, never over its rows, whatever the table's height."""

from __future__ import annotations

import pandas as pd
import pytest

from dpvae.render.output import pyplot, table_figure


@pytest.mark.parametrize("rows", [1, 12, 60])
@pytest.mark.parametrize("n_notes", [1, 6])
def test_notes_never_overlap_the_table(rows: int, n_notes: int) -> None:
    table = pd.DataFrame({"method": [f"m{i}" for i in range(rows)], "value": [0.5 + i for i in range(rows)]})
    notes = [f"note {i}: " + "a long sentence that wraps " * 8 for i in range(n_notes)]
    fig = table_figure(table, "title", notes)
    try:
        renderer = fig.canvas.get_renderer()
        fig.canvas.draw()
        (text,) = fig.texts
        table_box = fig.axes[0].tables[0].get_window_extent(renderer)
        notes_box = text.get_window_extent(renderer)
        assert notes_box.y1 <= table_box.y0, (notes_box, table_box)
        assert notes_box.y0 >= 0
    finally:
        pyplot().close(fig)
