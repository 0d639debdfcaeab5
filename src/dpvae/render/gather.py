"""figures/<item>.pdf: one item id gathered from every paper that has it, one page each."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from dpvae.files import atomic_write
from dpvae.render.output import apply_style, pyplot

if TYPE_CHECKING:  # matplotlib and pypdf load when a page is drawn, not when the Snakefile imports this module
    from matplotlib.figure import Figure


def gather(item_id: str, pdfs: list[str], pending: dict[str, list[str]], out: str | Path) -> None:
    """A cover page (what is included, what is not reproduced yet and why) followed by each item's pages."""
    from pypdf import PdfWriter

    writer = PdfWriter()
    cover = Path(out).with_suffix(".cover.pdf")
    atomic_write(cover, lambda tmp: _cover(item_id, pdfs, pending).savefig(tmp, format="pdf"))
    try:
        for path in [cover, *pdfs]:
            writer.append(str(path))
        atomic_write(out, lambda tmp: writer.write(tmp))
    finally:
        cover.unlink(missing_ok=True)


def _cover(item_id: str, pdfs: list[str], pending: dict[str, list[str]]) -> Figure:
    apply_style()
    fig = pyplot().figure(figsize=(8.27, 3 + 0.25 * len(pending)))
    lines = [f"'{item_id}' across the four papers", ""]
    lines += ["Included (one page each, in this order):"] + [f"   {Path(p).parent.name}/{Path(p).stem}" for p in pdfs]
    if not pdfs:
        lines += ["   (none yet)"]
    if pending:
        lines += ["", "Not reproduced yet (what is missing):"]
        lines += [f"   {key}: {', '.join(parts)}" for key, parts in sorted(pending.items())]
    fig.text(0.05, 0.95, "\n".join(lines), va="top", family="monospace", fontsize=8)
    return fig
