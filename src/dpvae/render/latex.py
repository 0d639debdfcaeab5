"""pdflatex-safe LaTeX: plain text escaped, non-ASCII characters as LaTeX commands, booktabs tables with notes.

Everything this module writes is 7-bit ASCII and compiles with pdflatex given ``booktabs`` and ``amssymb``
(``\\checkmark``). A character without a LaTeX form is a bug to fix here: `to_ascii_latex` raises, naming it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import pandas as pd

PACKAGES = ("booktabs", "amssymb")

SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
    "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
    "|": r"\textbar{}",
}  # fmt: skip

_GREEK = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "varepsilon", "ϵ": "epsilon", "ζ": "zeta",
    "η": "eta", "θ": "theta", "ϑ": "vartheta", "ι": "iota", "κ": "kappa", "λ": "lambda", "μ": "mu", "µ": "mu",
    "ν": "nu", "ξ": "xi", "π": "pi", "ρ": "rho", "σ": "sigma", "ς": "varsigma", "τ": "tau", "υ": "upsilon",
    "φ": "varphi", "ϕ": "phi", "χ": "chi", "ψ": "psi", "ω": "omega", "Γ": "Gamma", "Δ": "Delta",
    "Θ": "Theta", "Λ": "Lambda", "Ξ": "Xi", "Π": "Pi", "Σ": "Sigma", "Υ": "Upsilon", "Φ": "Phi", "Ψ": "Psi",
    "Ω": "Omega",
}  # fmt: skip
_MATH = {
    "≤": "leq", "≥": "geq", "≠": "neq", "≈": "approx", "∼": "sim", "±": "pm", "×": "times", "÷": "div",
    "·": "cdot", "∙": "cdot", "∞": "infty", "√": "surd", "∑": "sum", "∏": "prod", "∈": "in", "∉": "notin",
    "⊂": "subset", "⊆": "subseteq", "∪": "cup", "∩": "cap", "→": "rightarrow", "←": "leftarrow",
    "↔": "leftrightarrow", "⇒": "Rightarrow", "⇔": "Leftrightarrow", "‖": "|", "∥": "|", "ℓ": "ell",
    "∂": "partial", "∇": "nabla", "∀": "forall", "∃": "exists", "✓": "checkmark", "✔": "checkmark",
    "✗": "times", "✘": "times", "°": "circ", "′": "prime", "∘": "circ", "⊤": "top",
}  # fmt: skip
_TEXT = {
    "–": "--", "—": "---", "−": r"\ensuremath{-}", "‐": "-", "‑": "-", "…": r"\dots{}", "“": "``", "”": "''",
    "‘": "`", "’": "'", "«": "``", "»": "''", "§": r"\S{}", "¶": r"\P{}",
    "ß": r"\ss{}", "æ": r"\ae{}", "Æ": r"\AE{}", "ø": r"\o{}", "Ø": r"\O{}", "å": r"\aa{}", "Å": r"\AA{}",
    "œ": r"\oe{}", "ł": r"\l{}", "Ł": r"\L{}", "\u00a0": "~", "\u2009": r"\,", "\u202f": r"\,",
    "€": "EUR", "©": r"\copyright{}", "†": r"\dag{}", "‡": r"\ddag{}",
}  # fmt: skip
_SUPERSCRIPTS = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻", "0123456789+-"))
_SUBSCRIPTS = dict(zip("₀₁₂₃₄₅₆₇₈₉", "0123456789"))
_ACCENTS = {  # combining mark -> text-mode accent command
    "\u0300": "`", "\u0301": "'", "\u0302": "^", "\u0303": "~", "\u0304": "=", "\u0306": "u", "\u0307": ".",
    "\u0308": '"', "\u030a": "r", "\u030b": "H", "\u030c": "v", "\u0327": "c", "\u0328": "k",
}  # fmt: skip

UNICODE: dict[str, str] = {
    **{char: rf"\ensuremath{{\{name}}}" for char, name in _GREEK.items()},
    **{char: rf"\ensuremath{{\{name}}}" if name != "|" else r"\ensuremath{\|}" for char, name in _MATH.items()},
    **{char: rf"\textsuperscript{{{digit}}}" for char, digit in _SUPERSCRIPTS.items()},
    **{char: rf"\ensuremath{{_{{{digit}}}}}" for char, digit in _SUBSCRIPTS.items()},
    **_TEXT,
}
UNICODE["°"] = r"\ensuremath{^\circ}"


def escape(text: str) -> str:
    """Plain text as pdflatex-safe LaTeX: special characters escaped, non-ASCII as LaTeX commands."""
    return to_ascii_latex("".join(SPECIAL.get(char, char) for char in text))


def to_ascii_latex(source: str) -> str:
    """LaTeX source with raw Unicode -> the same source in 7-bit ASCII (``σ`` -> ``\\ensuremath{\\sigma}``).

    Accented Latin letters become text accents (``é`` -> ``\\'{e}``); a character without a LaTeX form
    raises `ValueError` naming it.
    """
    if source.isascii():
        return source
    out: list[str] = []
    for char in unicodedata.normalize("NFC", source):
        if char.isascii():
            out.append(char)
        elif char in UNICODE:
            out.append(UNICODE[char])
        elif char in _ACCENTS and out and len(out[-1]) == 1 and out[-1].isalpha():  # x + U+0303 -> \~{x}
            out[-1] = rf"\{_ACCENTS[char]}{{{out[-1]}}}"
        else:
            out.append(_accented(char, source))
    return "".join(out)


def _accented(char: str, source: str) -> str:
    """A precomposed accented Latin letter as text accents (``é`` -> ``\\'{e}``); anything else raises."""
    base, *marks = unicodedata.normalize("NFD", char)
    if base.isascii() and base.isalpha() and marks and all(mark in _ACCENTS for mark in marks):
        for mark in marks:
            base = rf"\{_ACCENTS[mark]}{{{base}}}"
        return base
    name = unicodedata.name(char, "unnamed")
    raise ValueError(
        f"no LaTeX form for {char!r} (U+{ord(char):04X} {name}) in {source!r}; add it to dpvae.render.latex.UNICODE"
    )


def table_tex(
    table: pd.DataFrame,
    title: str,
    notes: Sequence[str] = (),
    *,
    latex_cells: bool = False,
    fmt=str,
    na_rep: str = "--",
) -> str:
    """A booktabs ``table`` float: caption = title, one row per record, the notes below the rule.

    Cells and headers are plain text (escaped) unless ``latex_cells`` (they are LaTeX already; only their
    Unicode is converted). Numeric columns are right-aligned. The result is 7-bit ASCII.
    """
    convert = to_ascii_latex if latex_cells else escape

    def cell(value: object) -> str:
        return na_rep if pd.isna(value) else convert(fmt(value))

    align = "".join("r" if pd.api.types.is_numeric_dtype(table[c]) else "l" for c in table.columns)
    lines = [
        f"% {escape(title)}",
        "% written by dpvae; needs " + ", ".join(rf"\usepackage{{{p}}}" for p in PACKAGES),
        r"\begin{table}",
        r"\centering",
        rf"\caption{{{escape(title)}}}",
        rf"\begin{{tabular}}{{{align}}}",
        r"\toprule",
        " & ".join(convert(str(c)) for c in table.columns) + r" \\",
        r"\midrule",
        *(" & ".join(cell(v) for v in row) + r" \\" for row in table.itertuples(index=False)),
        r"\bottomrule",
        r"\end{tabular}",
    ]
    if notes:
        lines += [
            r"\par\smallskip",
            r"\begin{minipage}{\linewidth}\footnotesize",
            *(escape(note) + r"\par" for note in notes),
            r"\end{minipage}",
        ]
    lines.append(r"\end{table}")
    text = "\n".join(lines) + "\n"
    assert text.isascii(), "table_tex must write 7-bit ASCII"
    return text


def standalone_document(fragments: Sequence[str]) -> str:
    """A minimal pdflatex document holding the given table fragments (LaTeX source): a preview, and the
    check that they compile."""
    preamble = [
        r"\documentclass{article}",
        r"\usepackage[margin=1cm,landscape]{geometry}",
        *(rf"\usepackage{{{p}}}" for p in PACKAGES),
    ]
    return "\n".join([*preamble, r"\begin{document}", *fragments, r"\end{document}", ""])
