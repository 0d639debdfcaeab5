"""Every output path and wildcard pattern comes from dpvae.paths: no string literal (f-string parts included) in
src/dpvae, the rules, workflow/campaigns, workflow/scripts or benchmarks spells the workflow's layout by hand.

Refused: a word beginning `results/`, `figures/` or `logs/`, or holding one of the layout's folders between
slashes (`/runs/`, `/tables/`, ...); a file of a run's directory or of the data root by name (`train.json`,
`privacy.json`, `samples.npz`, `meta.json`, ...: `dpvae.paths.RUN_FILES` and the data root's), or one of their
folders in a path (`{run}/model`, `{root}/prepared/...`, `run / "metrics"`). Exempt: docstrings and comments (not
string tokens), and prose words with a `<placeholder>` (help texts and messages describing the layout:
`results/<scale>/tables/...`).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from dpvae import paths

REPO = Path(__file__).resolve().parents[2]
#: folders in a run's (or first stage's) directory and in the data root: refused after a slash or joined to a Path
#: (not `benchmarks`, also the repository's folder of that name: refused between slashes, as `/runs/`)
FOLDERS = (paths.MODEL, paths.METRICS, paths.RAW, paths.PREPARED)
#: files named there: refused anywhere in a word (`x.privacy.json`, another file, is not one of them)
FILES = tuple(n for n in (*paths.RUN_FILES, paths.FETCHED_MARKER, paths.PREPARED_META) if n not in FOLDERS)
LAYOUT = re.compile(
    r"(?<![\w.-])(?:results|figures|logs)/|/(?:runs|stage1|tables|items|experiments|references|benchmarks)/"
    rf"|(?<![\w.-])(?:{'|'.join(re.escape(name) for name in FILES if name != paths.BENCHMARKS)})(?![\w-])"
    rf"|/(?:{'|'.join(FOLDERS)})(?=[/\"'}}]|$)|(?<![\w.-])(?:{paths.RAW}|{paths.PREPARED})/"
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
    previous = None
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.STRING and token.start not in skip:
            if previous is not None and previous.string == "/" and _joined(token.string) in FOLDERS:
                found.append((token.start[0], f"/ {token.string}"))  # a Path joined with a folder's name
            for word in token.string.split():
                if LAYOUT.search(word) and not PLACEHOLDER.search(word):
                    found.append((token.start[0], word))
        if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            previous = token
    return found


def _joined(literal: str) -> str | None:
    """The value of a plain string literal (None for an f-string, whose value is not known here)."""
    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


def _sources():
    for path in sorted((REPO / "src" / "dpvae").rglob("*.py")):
        if path.name != "paths.py" or path.parent.name != "dpvae":
            yield path, True
    for folder in ("workflow", "benchmarks"):
        for path in sorted((REPO / folder).rglob("*.py")):
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


def test_the_rule_finds_planted_run_files():
    planted = '''
"""A run holds train.json, privacy.json and metrics/<metric>.json; data/prepared/mnist/meta.json."""
def f(run, root, metric, out):
    # a comment may name <run>/samples.npz and {root}/raw/mnist/SHA256SUMS
    help = f"the run directory (holds {TRAIN_RECORD}); <run>/privacy.json"
    a = run / "train.json"
    b = f"{run}/privacy.json"
    c = Path(run) / "model"
    d = f"{run}/metrics/{metric}.json"
    e = str(run) + "/samples.npz"
    g = Path(root) / "prepared" / "mnist"
    h = f"{root}/raw/{{source}}/SHA256SUMS"
    fine = (out.with_name(f"{out.stem}.privacy.json"), needs["model"], ("model", "data"), "cluster*/model.pt")
    repo = REPO_ROOT / "benchmarks" / "measured"
    i = run / "checkpoint.pt"
'''
    found = spelt_paths(planted)
    assert sorted({line for line, _ in found}) == [6, 7, 8, 9, 10, 11, 12, 15], found
    smk = 'rule x:\n    output:\n        f"{RUN}/samples.npz",\n        directory(f"{DATA}/prepared/{{dataset}}"),\n'
    assert [line for line, _ in spelt_paths(smk, python=False)] == [3, 4]
    smk = 'rule x:\n    output:\n        f"{RESULTS}/experiments/{{experiment}}.json",\n    log:\n        "logs/x"\n'
    assert [line for line, _ in spelt_paths(smk, python=False)] == [3, 5]


def test_a_run_file_is_the_same_path_as_a_string_or_a_path():
    """The rules pass strings, the stages Paths: both forms name one file (the rules' string stays a string)."""
    run, root = "results/smoke/runs/mnist/vae/eps1/seed0", "data"
    for name, built in {
        "model": paths.model_path(run),
        "train.json": paths.train_record(run),
        "privacy.json": paths.ledger_file(run),
        "audit.json": paths.audit_file(run),
        "checkpoint.pt": paths.checkpoint_file(run),
        "samples.npz": paths.samples_file(run),
        "metrics/fid.json": paths.metric_file(run, "fid"),
        "stage1.json": paths.stage1_record(run),
    }.items():
        assert built == f"{run}/{name}"
    for name, built in {
        "raw/mnist": paths.raw_dir(root, "mnist"),
        "raw/mnist/SHA256SUMS": paths.fetched_marker(root, "mnist"),
        "prepared/mnist-p3gm": paths.prepared_dir(root, "mnist-p3gm"),
        "prepared/mnist-p3gm/meta.json": paths.prepared_meta(root, "mnist-p3gm"),
    }.items():
        assert built == f"{root}/{name}"
    assert paths.metric_file(Path(run), "fid") == Path(run) / "metrics" / "fid.json"
    assert paths.prepared_meta(Path(root), "x") == Path(root) / "prepared" / "x" / "meta.json"
