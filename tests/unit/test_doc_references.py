"""Every document the repository cites is in the repository, and every entry cited in docs/papers.md exists.

Read: src/, tests/, workflow/, benchmarks/, docs/, examples/, envs/, README.md, config.yaml, Snakefile and
Makefile. A `*.md` name resolves beside the citing file or at the repository root; a `docs/...` path at the
root, and so does a `workflow/campaigns/...` path (a campaign's overlay or script) outside CSV data (recorded
commands name overlays where they were then). An ambiguity id (A-P1, A-G10, ...) cited anywhere, and a section
(§3.3) or item (p3gm/table6) cited as `docs/papers.md ...`, must have its entry in docs/papers.md, and every
paper's item of `dpvae.items` its own. A section anchor (`README.md#privacy-in-one-paragraph`,
`docs/privacy.md#two-modes-replication-runs-and-releases`, `#...` within a document) must name a heading of that
document (GitHub's slug: lower case, punctuation but `-` and `_` dropped, spaces as `-`) or an `<a id>` in it.
In tests/ only comments and docstrings are read: test code's string literals are fixtures, made-up paths
among them.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

from dpvae.items import ITEMS, PAPERS

ROOT = Path(__file__).resolve().parents[2]
SCOPE = ("src", "tests", "workflow", "benchmarks", "docs", "examples", "envs")
TOP_FILES = ("README.md", "config.yaml", "Snakefile", "Makefile")
TEXT_SUFFIXES = {".py", ".md", ".rst", ".yaml", ".yml", ".smk", ".sh", ".txt", ".csv", ".toml", ".cfg", ".ini"}
SPEC = "docs/papers.md"

MD_REF = re.compile(r"(?<![\w./:-])((?:\.\.?/)*[\w][\w./-]*\.md)\b")
DOCS_REF = re.compile(r"(?<![\w./-])docs/[\w./-]*[\w-]")
CAMPAIGN_REF = re.compile(r"(?<![\w./-])workflow/campaigns(?:/[\w.-]*[\w-])+")
AMBIGUITY = re.compile(r"\bA-[PLGD]\d+\b")
ANCHOR_REF = re.compile(r"(?:(?<![\w./:-])((?:\.\.?/)*[\w][\w./-]*\.md)|(?<=\]\())#([\w-]+)")
#: `docs/papers.md` and the sections and ids listed after it: "§3.1, §3.5", "§1.4-1.5", "§1.2 and A-P8".
SPEC_CITATION = re.compile(
    re.escape(SPEC) + r"(?:'s)?((?:(?:[ ,/]|and )+(?:§?\d+(?:\.\d+)*(?:[–-]\d+(?:\.\d+)*)?|A-[PLGD]\d+))+)"
)
SPEC_ITEM = re.compile(re.escape(SPEC) + r"(?:'s)? `?((?:privae|lvae|p3gm|dp2vae)/(?:table|fig)\d+)")


def scoped_files(root: Path) -> list[Path]:
    """The text files in scope: git's tracked and untracked-not-ignored files where git knows the tree."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", *SCOPE, *TOP_FILES],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        paths = [root / name for name in listed]
    except (OSError, subprocess.CalledProcessError):
        paths = [p for d in SCOPE for p in (root / d).rglob("*")] + [root / name for name in TOP_FILES]
    return sorted(p for p in paths if p.is_file() and (p.suffix in TEXT_SUFFIXES or p.name in TOP_FILES))


def prose(path: Path, root: Path) -> str:
    """The text whose references count: a test module's comments and docstrings, any other file whole."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix != ".py" or path.relative_to(root).parts[0] != "tests":
        return text
    parts = [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            parts.append(ast.get_docstring(node, clean=False) or "")
    return "\n".join(parts)


def spec_entries(spec: Path) -> tuple[set[str], set[str]]:
    """docs/papers.md's anchors (ambiguity ids, `<paper>-<item>`) and its numbered sections."""
    text = spec.read_text(encoding="utf-8")
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', text))
    sections = set(re.findall(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", text, re.MULTILINE))
    sections |= set(re.findall(r"\*\*(\d+(?:\.\d+)+)\*\*", text))
    return anchors, sections


def slugs(document: Path) -> set[str]:
    """The anchors of a markdown document: its headings' GitHub slugs (a repeated one gets -1, -2, ...) and ids."""
    text = document.read_text(encoding="utf-8")
    found, seen = set(re.findall(r'<a id="([^"]+)"></a>', text)), {}
    for heading in re.findall(r"^#{1,6} (.+?)\s*$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return found


def problems(root: Path) -> list[str]:
    """Every reference in scope that does not resolve inside `root`, as 'file: reference (why)'."""
    spec = root / SPEC
    anchors, sections = spec_entries(spec) if spec.is_file() else (set(), set())
    found = []
    for path in scoped_files(root):
        name, text = path.relative_to(root).as_posix(), prose(path, root)
        for ref in MD_REF.findall(text):
            if not ((path.parent / ref).is_file() or (root / ref).is_file()):
                found.append(f"{name}: {ref} (no such document in the repository)")
        for ref in DOCS_REF.findall(text) + (CAMPAIGN_REF.findall(text) if path.suffix != ".csv" else []):
            if not (root / ref).exists():
                found.append(f"{name}: {ref} (no such path in the repository)")
        for ref, anchor in ANCHOR_REF.findall(text) if path.suffix in (".md", ".py") else ():
            target = path if not ref else path.parent / ref if (path.parent / ref).is_file() else root / ref
            if target.suffix == ".md" and target.is_file() and anchor not in slugs(target):
                found.append(f"{name}: {ref or name}#{anchor} (no such section)")
        for ref in AMBIGUITY.findall(text):
            if ref not in anchors:
                found.append(f"{name}: {ref} (no entry in {SPEC})")
        cited = (AMBIGUITY.sub("", tail) for tail in SPEC_CITATION.findall(text))
        for ref in {number for tail in cited for number in re.findall(r"\d+(?:\.\d+)*", tail)}:
            if ref not in sections:
                found.append(f"{name}: {SPEC} §{ref} (no such section)")
        for ref in SPEC_ITEM.findall(text):
            if ref.replace("/", "-") not in anchors:
                found.append(f"{name}: {SPEC} {ref} (no entry for this item)")
    return sorted(set(found))


def test_every_reference_resolves_inside_the_repository() -> None:
    assert problems(ROOT) == []


def test_the_specification_has_one_entry_per_item() -> None:
    anchors, _ = spec_entries(ROOT / SPEC)
    items = {key.replace("/", "-") for key, item in ITEMS.items() if item.paper in PAPERS}
    specified = {a for a in anchors if a.split("-")[0] in PAPERS}
    assert specified == items


def test_a_planted_reference_to_a_missing_document_fails(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / SPEC).write_text('## 1. One\n\n### 1.2 Two\n\n<a id="A-P1"></a>**A-P1** x <a id="p3gm-fig4"></a>\n')
    (tmp_path / "docs" / "other.md").write_text("see [papers](papers.md) and README.md\n")
    (tmp_path / "README.md").write_text(
        "docs/papers.md §1.2, A-P1; docs/papers.md p3gm/fig4; --configfile=workflow/campaigns/overlays/on.yaml\n"
    )
    (tmp_path / "workflow" / "campaigns" / "overlays").mkdir(parents=True)
    (tmp_path / "workflow" / "campaigns" / "overlays" / "on.yaml").write_text("seeds: [0]\n")
    (tmp_path / "workflow" / "campaigns" / "run.sh").write_text("CONFIG=workflow/campaigns/off.yaml snakemake\n")
    (tmp_path / "src" / "recorded.csv").write_text("command\nsnakemake --configfile=workflow/campaigns/off.yaml\n")
    (tmp_path / "src" / "mod.py").write_text(
        '"""Spec: DESIGN.md A-P1 and docs/papers.md A-P2, §1.3; docs/gone.md; docs/papers.md `p3gm/fig5`."""\n'
    )
    (tmp_path / "tests" / "test_x.py").write_text(
        '"""The style: ../STYLE.md."""\n\nFIXTURE = "docs/made-up.md"  # made up on purpose\n'
    )
    assert problems(tmp_path) == [
        "src/mod.py: A-P2 (no entry in docs/papers.md)",
        "src/mod.py: DESIGN.md (no such document in the repository)",
        "src/mod.py: docs/gone.md (no such document in the repository)",
        "src/mod.py: docs/gone.md (no such path in the repository)",
        "src/mod.py: docs/papers.md p3gm/fig5 (no entry for this item)",
        "src/mod.py: docs/papers.md §1.3 (no such section)",
        "tests/test_x.py: ../STYLE.md (no such document in the repository)",
        "workflow/campaigns/run.sh: workflow/campaigns/off.yaml (no such path in the repository)",
    ]


def test_a_planted_anchor_to_a_missing_section_fails(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "x.md").write_text("# X: the title\n\n## Two modes — seeded, secret\n\nsee [below](#gone)\n")
    (tmp_path / "README.md").write_text(
        "[ok](docs/x.md#two-modes--seeded-secret), docs/x.md#x-the-title; issue #34; docs/x.md#old-name\n"
    )
    assert problems(tmp_path) == [
        "README.md: docs/x.md#old-name (no such section)",
        "docs/x.md: docs/x.md#gone (no such section)",
    ]
