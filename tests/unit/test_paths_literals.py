"""Every output path and wildcard pattern comes from dpvae.paths: no string literal (f-string parts included) in
src/dpvae or workflow/rules spells the workflow's layout by hand.

Refused: a word beginning `results/`, `figures/` or `logs/`, or holding one of the layout's folders between
slashes (`/runs/`, `/tables/`, ...). Exempt: docstrings and comments (not string tokens), and prose words with a
`<placeholder>` (help texts and messages describing the layout: `results/<scale>/tables/...`).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LAYOUT = re.compile(
    r"(?<![\w.-])(?:results|figures|logs)/|/(?:runs|stage1|tables|items|experiments|references|benchmarks)/"
)
PLACEHOLDER = re.compile(r"(?<!\(\?P)<\w+>")


def _docstrings(source: str) -> set[tuple[int, int]]:
    """(line, column) of every docstring of a Python module."""
    starts = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                starts.add((first.lineno, first.col_offset))
    return starts


def spelt_paths(source: str, python: bool = True) -> list[tuple[int, str]]:
    """(line, word) of each string literal's word that spells the output layout (.smk: python=False)."""
    skip = _docstrings(source) if python else set()
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.STRING or token.start in skip:
            continue
        for word in token.string.split():
            if LAYOUT.search(word) and not PLACEHOLDER.search(word):
                found.append((token.start[0], word))
    return found


def _sources():
    for path in sorted((REPO / "src" / "dpvae").rglob("*.py")):
        if path.name != "paths.py" or path.parent.name != "dpvae":
            yield path, True
    for path in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        yield path, False
    yield REPO / "Snakefile", False


def test_no_path_spelt_outside_paths_module():
    spelt = [
        f"{path.relative_to(REPO)}:{line}: {word}"
        for path, python in _sources()
        for line, word in spelt_paths(path.read_text(), python)
    ]
    assert not spelt, "build these paths with dpvae.paths:\n" + "\n".join(spelt)


def test_the_rule_finds_planted_paths():
    planted = '''
"""A docstring may say results/<scale>/runs/ and figures/p3gm/fig1.pdf."""
def f(scale, e, d):
    """So may this one: logs/render/x.log."""
    # and a comment: results/smoke/tables/x.csv
    help = "results/<scale>/items/<paper>/<item>.json"
    a = f"{scale}/tables/{e}/{d}.csv"
    b = "figures/scorecard.pdf"
    c = f"logs/{scale}/x.log"
    target = re.compile(r"^figures/(?P<paper>[^/]+)$")
    fine = ("results", f"{e}/{d}", "catalogs/x")
'''
    assert [line for line, _ in spelt_paths(planted)] == [7, 8, 9, 10]
    smk = 'rule x:\n    output:\n        f"{RESULTS}/experiments/{{experiment}}.json",\n    log:\n        "logs/x"\n'
    assert [line for line, _ in spelt_paths(smk, python=False)] == [3, 5]
