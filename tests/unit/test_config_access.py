"""The configuration is read as typed values (`dpvae.config.Config`) everywhere but dpvae/config.py: no `config[...]`,
`cfg[...]` or `config.get(...)` with a string key in src/dpvae, the rules, the Snakefile or workflow/ scripts.

Refused: a subscript or `.get` call with a string constant on a name or attribute called `config`, `cfg` or
`conf` (Snakemake's `config` dict in a rule file too). `LEFT` lists the modules not converted yet, each with how
many such reads it still has: a converted module must leave the list, and a module may not gain reads.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NAMES = re.compile(r"^(config|cfg|conf)$")
#: modules that still read a configuration mapping by key, with their count (none left: a module may not start)
LEFT: dict[str, int] = {}
#: not the workflow's configuration: the schema layer validates the mapping before it is typed; a model's own
#: constructor arguments (`LatentVAE.config`)
EXEMPT = {"src/dpvae/schema.py", "src/dpvae/models/latent_vae.py"}


def _receiver(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def raw_reads(source: str) -> list[int]:
    """Lines of each configuration read by string key (`config["x"]`, `cfg.get("x")`, `self.config["x"]`)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            receiver, key = _receiver(node.value), node.slice
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
        ):
            receiver, key = _receiver(node.func.value), node.args[0]
        else:
            continue
        if receiver and NAMES.match(receiver) and isinstance(key, ast.Constant) and isinstance(key.value, str):
            lines.append(node.lineno)
    return sorted(lines)


def _smk_python(text: str) -> str:
    """A rule file's Python expressions, one per line, parseable (the Snakemake keywords dropped)."""
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        body = re.sub(r"^[a-z_]+\s*:\s*", "", stripped) if re.match(r"^[a-z_]+\s*:", stripped) else stripped
        body = re.sub(r"^[a-z_]+\s*=", "", body).rstrip(",")
        try:
            ast.parse(body)
        except SyntaxError:
            body = ""
        out.append(body)
    return "\n".join(out)


def _sources():
    for folder in ("src/dpvae", "workflow"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if path.relative_to(REPO).as_posix() not in {"src/dpvae/config.py", *EXEMPT}:
                yield path, path.read_text()
    for path in [*sorted((REPO / "workflow" / "rules").glob("*.smk")), REPO / "Snakefile"]:
        yield path, _smk_python(path.read_text())


def test_no_raw_config_access_outside_config_module():
    found = {}
    for path, source in _sources():
        if lines := raw_reads(source):
            found[path.relative_to(REPO).as_posix()] = lines
    new = {f: lines for f, lines in found.items() if len(lines) > LEFT.get(f, 0)}
    assert not new, "read the typed Config (dpvae.config) instead of the mapping:\n" + "\n".join(
        f"{f}: lines {lines}" for f, lines in new.items()
    )
    converted = sorted(set(LEFT) - set(found))
    assert not converted, f"no raw reads left: remove from LEFT {converted}"


def test_the_walk_finds_planted_reads():
    planted = """
def f(config, rules, ctx, meta):
    a = config["experiments"]
    b = rules.config["variants"]["x"]
    c = ctx.config.get("scale", "paper")
    d = cfg["data"]
    config["scale"] = "x"
    fine = (meta["shapes"], config.experiments, rules.config.variants["x"], {}.get("x"), config[0])
"""
    assert raw_reads(planted) == [3, 4, 5, 6]
    smk = 'rule x:\n    params:\n        seed=config["data"]["split_seed"],\n        n=lambda w: CONFIG.data.root,\n'
    assert raw_reads(_smk_python(smk)) == [3]
