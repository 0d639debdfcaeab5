"""The .tex tables: 7-bit ASCII, special characters escaped, Unicode as LaTeX commands, the PDF's notes
carried along; they compile with pdflatex where it is installed (the ASCII checks run everywhere)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from dpvae.render.latex import SPECIAL, UNICODE, escape, standalone_document, table_tex, to_ascii_latex
from dpvae.render.output import save_table

PDFLATEX = shutil.which("pdflatex")
needs_pdflatex = pytest.mark.skipif(
    PDFLATEX is None,
    reason="pdflatex is not on the PATH (Debian: texlive-latex-base texlive-latex-recommended); "
    "the ASCII checks still run",
)


def pdflatex(fragments: list[str], workdir: Path) -> str:
    """Compile the fragments in a minimal document; return the log (the test fails on any TeX error)."""
    (workdir / "doc.tex").write_text(standalone_document(fragments), encoding="ascii")
    result = subprocess.run(
        [PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
        cwd=workdir,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=120,
    )
    log = (workdir / "doc.log").read_text(errors="replace")
    assert result.returncode == 0 and (workdir / "doc.pdf").is_file(), result.stdout[-3000:]
    assert "Missing character" not in log, [line for line in log.splitlines() if "Missing character" in line]
    return log


def test_special_characters_are_escaped_and_unicode_becomes_ascii() -> None:
    assert escape("50% of a_b & {c} #1 $5 ~ ^ \\ <> |") == (
        r"50\% of a\_b \& \{c\} \#1 \$5 \textasciitilde{} \textasciicircum{} \textbackslash{} "
        r"\textless{}\textgreater{} \textbar{}"
    )
    assert (
        escape("σ ≤ 1 – ε·δ") == r"\ensuremath{\sigma} \ensuremath{\leq} 1 -- \ensuremath{\varepsilon}"
        r"\ensuremath{\cdot}\ensuremath{\delta}"
    )
    assert escape("Rényi, Groß, x̃, 10⁻⁵") == r"R\'{e}nyi, Gro\ss{}, \~{x}, 10\textsuperscript{-}\textsuperscript{5}"
    assert to_ascii_latex(r"$\sigma_\phi$ and µ") == r"$\sigma_\phi$ and \ensuremath{\mu}", "LaTeX is kept"
    assert all(value.isascii() for value in UNICODE.values())


def test_a_character_without_a_latex_form_is_named() -> None:
    with pytest.raises(ValueError, match=r"U\+1F600"):
        escape("ok \U0001f600")


def test_table_tex_is_ascii_with_caption_notes_and_alignment() -> None:
    table = pd.DataFrame(
        {
            "method": ["micro agg.", "term-wise"],
            "noise (paper)": ["C·σ", "(C1/B + C2/b)·κ·σ"],
            "value": [0.5, float("nan")],
        }
    )
    tex = table_tex(
        table,
        "PriVAE Table 1 – σ",
        ["first note: ε ≤ 10 & δ = 1e-5", "second_note 100%"],
        fmt=lambda v: f"{v:.3g}" if isinstance(v, float) else str(v),
    )
    assert tex.isascii()
    assert r"\caption{PriVAE Table 1 -- \ensuremath{\sigma}}" in tex and r"\begin{tabular}{llr}" in tex
    assert r"micro agg. & C\ensuremath{\cdot}\ensuremath{\sigma} & 0.5 \\" in tex
    assert r"term-wise & (C1/B + C2/b)" in tex and r"& -- \\" in tex
    assert r"first note: \ensuremath{\varepsilon} \ensuremath{\leq} 10 \& \ensuremath{\delta} = 1e-5\par" in tex
    assert r"second\_note 100\%\par" in tex
    assert tex.index(r"\end{tabular}") < tex.index("first note") < tex.index(r"\end{table}")


def test_save_table_writes_the_same_notes_into_the_tex_and_the_pdf(tmp_path: Path) -> None:
    from pypdf import PdfReader

    notes = ["Alpha note: sigma = 0.5 for (10, 1e-5).", "Beta note: kappa*sigma*sqrt((C1/B)^2)."]
    table = pd.DataFrame({"symbol": ["σ", "ε"], "n": [1.0, 2.0]})
    save_table(table, tmp_path / "t", "A title – with Unicode", notes)
    tex = (tmp_path / "t.tex").read_bytes()
    assert tex.isascii() and b"\\ensuremath{\\sigma} & 1 \\\\" in tex
    pdf_text = " ".join(PdfReader(tmp_path / "t.pdf").pages[0].extract_text().split())
    for note in notes:
        assert escape(note).encode() in tex
        assert note.split(":")[0] in pdf_text
    assert pd.read_csv(tmp_path / "t.csv")["symbol"].tolist() == ["σ", "ε"], "the CSV keeps the data as is"


@needs_pdflatex
def test_every_mapped_character_and_every_special_character_compiles(tmp_path: Path) -> None:
    text = " ".join(UNICODE) + " " + " ".join(SPECIAL) + " Rényi x̃"
    table = pd.DataFrame({"text": [text], "math": [r"$\sigma_\phi(x) \leq \varepsilon$ σ"]})
    fragments = [
        table_tex(table[["text"]], "all characters", [text]),
        table_tex(table[["math"]], "LaTeX cells", latex_cells=True),
    ]
    pdflatex(fragments, tmp_path)
