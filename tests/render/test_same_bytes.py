"""A rendered figure, table or gathered item written twice is the same bytes (no creation date in a PDF)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dpvae.render.gather import gather
from dpvae.render.output import Stamp, apply_style, pyplot, save_figure, save_table, stamped


def _figure():
    apply_style()  # as every renderer does (save_table applies it too)
    fig = pyplot().figure(figsize=(2, 2))
    fig.add_subplot().plot([0, 1], [1, 0])
    return fig


def test_a_figure_and_a_table_saved_twice_are_the_same_bytes(tmp_path: Path, monkeypatch) -> None:
    table = pd.DataFrame({"method": ["p3gm", "dp-gm"], "auroc": [0.81, 0.72]})
    with stamped(Stamp(scale="smoke", commit="abc", seeds=(0, 1))):
        for name, day in (("a", 0), ("b", 1)):
            monkeypatch.setenv("SOURCE_DATE_EPOCH", str(86400 * day))  # matplotlib's creation date, if it wrote one
            save_figure(_figure(), tmp_path / f"figure-{name}")
            save_table(table, tmp_path / f"table-{name}", "A table")
    for kind, ext in (("figure", "pdf"), ("figure", "png"), ("table", "pdf"), ("table", "tex"), ("table", "csv")):
        first, second = (tmp_path / f"{kind}-{name}.{ext}" for name in "ab")
        assert first.read_bytes() == second.read_bytes(), f"{kind} .{ext}"


def test_a_gathered_item_written_twice_is_the_same_bytes(tmp_path: Path, monkeypatch) -> None:
    with stamped(Stamp(scale="smoke")):
        save_figure(_figure(), tmp_path / "page")
    for name, day in (("a", 0), ("b", 1)):
        monkeypatch.setenv("SOURCE_DATE_EPOCH", str(86400 * day))
        gather("fig1", [str(tmp_path / "page.pdf")], {"lvae/fig1": ["runs"]}, tmp_path / f"gathered-{name}.pdf")
    assert (tmp_path / "gathered-a.pdf").read_bytes() == (tmp_path / "gathered-b.pdf").read_bytes()
