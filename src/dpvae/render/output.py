"""Writing rendered items: tables as PDF + CSV + TeX, figures as PDF + PNG, all atomically, one style."""

from __future__ import annotations

import contextlib
import contextvars
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from dpvae.files import atomic_write
from dpvae.render.latex import table_tex

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PAPER_LABEL = "paper"
STYLE = {"context": "paper", "style": "whitegrid", "palette": "colorblind", "font_scale": 1.0}


def pyplot() -> Any:
    """matplotlib.pyplot on the file-only Agg backend (imported on use: validation stays light)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def apply_style() -> None:
    """The one seaborn style every figure uses."""
    import seaborn as sns

    sns.set_theme(**STYLE)
    pyplot().rcParams.update({"figure.dpi": 150, "savefig.bbox": "tight", "pdf.fonttype": 42})


#: the scale of a user's own experiments (examples/own-data/*.yaml): results/own/, never mixed with a paper's runs
OWN_SCALE = "own"


def scale_note(scale: str) -> str | None:
    """What a page or caption says of its scale: nothing at paper scale, 'your data' at the own-data scale, else
    that its numbers check the pipeline and reproduce nothing."""
    if scale == "paper":
        return None
    if scale == OWN_SCALE:
        return "your dataset and settings, not a paper's"
    return "not the paper's setting (a check that the pipeline runs, not a reproduction)"


@dataclass(frozen=True)
class Stamp:
    """Scale and provenance of one rendered item: on the page unless paper scale, always in the metadata."""

    scale: str = "paper"
    commit: str = "unknown"
    config_sha256: str = ""
    seeds: tuple[int, ...] = ()

    @property
    def label(self) -> str | None:
        """The on-page scale label (None at paper scale)."""
        note = scale_note(self.scale)
        return note and f"{self.scale} scale: {note}"

    def metadata(self, ext: str) -> dict[str, str | None]:
        """The file's metadata: provenance, and no creation date (the same inputs give the same bytes)."""
        text = (
            f"scale={self.scale}; commit={self.commit}; config_sha256={self.config_sha256}; "
            f"seeds={','.join(map(str, self.seeds)) or '-'}"
        )
        return {"Subject": text, "CreationDate": None} if ext == "pdf" else {"Description": text}


_STAMP: contextvars.ContextVar[Stamp] = contextvars.ContextVar("stamp", default=Stamp())


@contextlib.contextmanager
def stamped(stamp: Stamp) -> Iterator[None]:
    """Render everything inside with this scale label and provenance."""
    token = _STAMP.set(stamp)
    try:
        yield
    finally:
        _STAMP.reset(token)


def current_stamp() -> Stamp:
    return _STAMP.get()


def save_figure(fig: Figure, prefix: str | Path) -> None:
    """<prefix>.pdf and <prefix>.png, labelled with the scale unless paper scale, provenance in the metadata."""
    stamp = current_stamp()
    if stamp.label:
        fig.text(0.5, -0.02, stamp.label, ha="center", va="top", fontsize=7, color="#b00020", style="italic")
    for ext in ("pdf", "png"):
        atomic_write(f"{prefix}.{ext}", lambda tmp, ext=ext: fig.savefig(tmp, format=ext, metadata=stamp.metadata(ext)))
    pyplot().close(fig)


def save_table(table: pd.DataFrame, prefix: str | Path, title: str, notes: list[str] = (), escape: bool = True) -> None:
    """<prefix>.csv (the data), <prefix>.tex and <prefix>.pdf, the notes below the table in both.

    The .tex is a pdflatex-safe booktabs table (7-bit ASCII, see `dpvae.render.latex`); `escape=False`
    keeps cells that are LaTeX already.
    """
    table = integral_columns(table)
    stamp = current_stamp()
    notes = [*([stamp.label] if stamp.label else []), *notes]
    atomic_write(f"{prefix}.csv", lambda tmp: table.to_csv(tmp, index=False, float_format="%.6g"))
    tex = table_tex(table, title, notes, latex_cells=not escape, fmt=_fmt)
    atomic_write(f"{prefix}.tex", lambda tmp: Path(tmp).write_text(tex, encoding="ascii"))
    fig = table_figure(table, title, notes)
    atomic_write(f"{prefix}.pdf", lambda tmp: fig.savefig(tmp, format="pdf", metadata=stamp.metadata("pdf")))
    pyplot().close(fig)


def integral_columns(table: pd.DataFrame) -> pd.DataFrame:
    """Float columns holding only whole numbers (counts, epochs, batch sizes) become integer columns."""
    table = table.copy()
    for column in table.columns:
        values = table[column]
        if pd.api.types.is_float_dtype(values) and values.notna().any() and (values.dropna() % 1 == 0).all():
            table[column] = values.astype("Int64")
    return table


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def table_figure(table: pd.DataFrame, title: str, notes: list[str] = ()) -> Figure:
    """A table drawn on a figure page, with wrapped cells (never inside $math$), a title and notes."""
    apply_style()
    cells = [[_wrap(_fmt(v) if not pd.isna(v) else "--", 30) for v in row] for row in table.itertuples(index=False)]
    header = [_wrap(str(c), 16) for c in table.columns]
    lines = max([1] + [c.count("\n") + 1 for row in cells + [header] for c in row])
    rows = max(1, len(cells)) + 1
    width = max(
        6.0,
        0.08
        * sum(
            max(len(line) for cell in column for line in cell.split("\n")) + 2
            for column in zip(header, *(cells or [header]))
        ),
    )
    table_height = 0.2 * lines * rows
    notes_height = 0.12 * sum(len(textwrap.wrap(n, 150)) for n in notes)
    fig = pyplot().figure(figsize=(width, table_height + notes_height + 0.5))
    ax = fig.add_axes((0.02, (notes_height + 0.1) / fig.get_figheight(), 0.96, table_height / fig.get_figheight()))
    ax.axis("off")
    ax.set_title(title, fontsize=10, loc="left")
    body = cells or [["(empty)"] + [""] * (len(header) - 1)]
    longest = [max(len(line) for cell in column for line in cell.split("\n")) + 2 for column in zip(header, *body)]
    drawn = ax.table(
        cellText=body,
        colLabels=header,
        colWidths=[n / sum(longest) for n in longest],
        loc="center",
        cellLoc="center",
        bbox=(0, 0, 1, 1),
    )
    drawn.auto_set_font_size(False)
    drawn.set_fontsize(7)
    for (row, _), cell in drawn.get_celld().items():
        if row == 0:
            cell.set_text_props(weight="bold")
            cell.set_facecolor("#e8e8e8")
    if notes:
        # anchored 0.05 in above the page's bottom edge (not a fraction of its height): it stays under the table
        fig.text(
            0.02, 0.05 / fig.get_figheight(), "\n".join(textwrap.fill(n, 150) for n in notes), fontsize=6, va="bottom"
        )
    return fig


def _wrap(text: str, width: int) -> str:
    """Greedy line wrap that never breaks inside a $math$ span."""
    lines: list[str] = []
    for word in re.findall(r"\S*\$[^$]*\$\S*|\S+", text):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "\n".join(lines)


LISTING_CHAR_INCHES = 6.5 * 0.6 / 72  # one character of the 6.5 pt monospace listing


def listing_pages(
    pdf, title: str, rows: pd.DataFrame, notes: str = "", footnotes: list[str] = (), per_page: int = 80
) -> None:
    """Monospace pages listing `rows`, `per_page` to a page, under the title (rows a-b of n) and the notes; the
    `footnotes` (the reasons behind a dagger) under the rows of every page."""
    if rows.empty:
        return
    lines = rows.fillna("").to_string(index=False).splitlines()
    header, body = lines[0], lines[1:]
    width = max(8.0, LISTING_CHAR_INCHES * len(header) + 0.4)
    columns = int((width - 0.4) / LISTING_CHAR_INCHES)
    for start in range(0, len(body), per_page):
        page = body[start : start + per_page]
        heading = f"{title} (rows {start + 1}-{start + len(page)} of {len(body)})"
        below = [line for note in footnotes for line in textwrap.wrap(note, columns)]
        listing = [*textwrap.wrap(heading, columns), *textwrap.wrap(notes, columns), "", header, *page]
        listing += ["", *below] if below else []
        text = "\n".join(listing).encode("cp1252", "replace").decode("cp1252")  # the core Courier font: WinAnsi
        fig = pyplot().figure(figsize=(width, 0.11 * (text.count("\n") + 1) + 0.4))
        fig.text(
            0.2 / width,
            1 - 0.2 / fig.get_figheight(),
            text,
            family="monospace",
            weight="medium",
            fontsize=6.5,
            va="top",
        )
        pdf.savefig(fig)
        pyplot().close(fig)
