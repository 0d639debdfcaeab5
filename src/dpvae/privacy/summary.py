"""A release's ledger in a few lines: what `python -m dpvae ledger PATH` prints and `dpvae synth` reports.

PATH is a ledger (a run's `privacy.json`, or `x.privacy.json` beside `dpvae synth`'s `x.csv`) or a run directory.
The run (its `train.json`), where there is one, says which method made the release, and so how the release
depends on the number N of training records (`Method.releases_n`), and which prepared set holds its domain.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dpvae.errors import ConfigError, DataError
from dpvae.paths import LEDGER, ledger_file, prepared_meta, train_record
from dpvae.privacy.ledger import Accounting, Ledger
from dpvae.release import default_workspace
from dpvae.runspec import RunSpec

LEDGER_SUFFIX = ".privacy.json"
RUN_SUFFIXES = (".csv", ".npz")  # `dpvae synth` writes x.csv or x.npz, its run (if kept) in its workspace


def num(value: float) -> str:
    """A number as a user reads it (6 significant digits)."""
    return f"{value:.6g}"


def accounting_line(accounting: Accounting) -> str:
    """ε at δ, the adjacency, accountant and conversion."""
    return (
        f"ε = {num(accounting.epsilon)} at δ = {num(accounting.delta)} ({accounting.adjacency}, accountant "
        f"{accounting.accountant}, conversion {accounting.conversion})"
    )


def mechanism_line(mechanism: Any) -> str:
    return (
        f"{mechanism.name}: noise multiplier {num(mechanism.noise_multiplier)}, sample rate "
        f"{num(mechanism.sample_rate)} ({mechanism.sampling}), steps {mechanism.steps}"
    )


def public_text(ledger: Ledger, releases_n: str, n_train: int | None, domain: str) -> str:
    """What the release treats as public: N under bounded DP (the headline's adjacency is replace-one, or the
    method's release depends on N: `releases_n`), and the data's domain (`n_train`: the size to name, or None)."""
    size = f"N = {n_train}" if n_train is not None else "N"
    why = [f"{ledger.headline} accounting's replace-one neighbours have the same size"] * (
        ledger.headline_accounting.adjacency == "replace-one"
    ) + [releases_n] * bool(releases_n)
    count = f"{size} public (bounded DP: {'; '.join(why)})" if why else f"{size} protected (add/remove-one)"
    return f"{count}; {domain}"


def public_line(ledger: Ledger, releases_n: str, n_train: int | None, domain: str) -> str:
    """The `public:` line: the ledger's own statement (`Ledger.public`, a release's) or `public_text`."""
    return f"public: {ledger.public or public_text(ledger, releases_n, n_train, domain)}"


def domain_of(meta: dict | None, where: str) -> str:
    """The data's domain a release treats as public, as the prepared set's meta.json records it."""
    if meta is None:
        return "the data's domain (record shape, column ranges and categories, label classes) as prepared"
    shape = meta["shapes"]["train"][1:]
    classes = len(meta.get("label_names") or []) or meta.get("classes", "its")
    size = "x".join(map(str, shape))
    records = f"{size} images" if len(shape) > 1 else f"{size} columns with their ranges and categories"
    recorded = meta.get("domain")
    if recorded is None:  # a generated set (pinwheel, two Gaussians) or one prepared before domains were recorded
        return f"the domain: {records}, {classes} label classes (as prepared: {where})"
    source = {
        "declared": "declared (public)",
        "estimate": f"declared, bounds of {len((recorded.get('estimate') or {}).get('columns', ()))} column(s) "
        "estimated under the ledger's preprocessing",
        "from_data": "read from the training split (not DP)",
        "reference_code": "read from the whole set by P3GM's reference code's preprocessing (not DP)",
    }[recorded["source"]]
    return f"the domain: {records}, {classes} label classes, {source} ({where})"


def run_of(path: Path) -> Path | None:
    """The run directory of a ledger file (its own directory for privacy.json; for x.privacy.json, the run of a
    default workspace kept with `synth --keep-work`, `release.default_workspace`), or None where there is none."""
    if path.name == LEDGER:
        return path.parent
    stem = path.name.removesuffix(LEDGER_SUFFIX)
    runs = (default_workspace(path.with_name(stem + suffix)) / "run" for suffix in RUN_SUFFIXES)
    return next((run for run in runs if run.is_dir()), None)


def read_release(path: str | Path) -> tuple[Path, dict, RunSpec | None]:
    """(the ledger file, its JSON, the run's spec or None) of PATH, a ledger or a run directory; a missing file
    or one that is not JSON is a DataError naming it."""
    path = Path(path)
    file = ledger_file(path) if path.is_dir() else path
    if not file.is_file():
        raise DataError(f"{path}: no such ledger" + (f" ({LEDGER} in the run directory)" if path.is_dir() else ""))
    try:
        data = json.loads(file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise DataError(f"{file}: not a privacy ledger (not JSON: {error})") from None
    run = run_of(file)
    try:
        spec = RunSpec.from_dict(json.loads(train_record(run).read_text())["spec"]) if run is not None else None
    except (OSError, ValueError, KeyError, ConfigError):
        spec = None
    return file, data, spec


def _prepared_meta(spec: RunSpec) -> tuple[dict | None, str]:
    where = prepared_meta(Path(spec.data_root), spec.dataset)
    try:
        return json.loads(where.read_text()), str(where)
    except (OSError, ValueError):
        return None, str(where)


def screen(path: str | Path, releases_n: Callable[[str], str]) -> str:
    """One screen on the ledger at PATH: the headline ε and its accounting, the paper's and the sound ε at δ, the
    adjacency and accountant, each mechanism, why it is not DP (if so), where its noise came from, the target and
    what is public
    (`releases_n`: a method's `Method.releases_n` by its name)."""
    file, data, spec = read_release(path)
    if not isinstance(data, dict):
        raise DataError(f"{file}: not a privacy ledger (a JSON {type(data).__name__})")
    if data.get("private") is False:
        return f"{file}: a non-private release (method {data.get('method', '?')}): no differential-privacy guarantee"
    try:
        ledger = Ledger.from_dict(data)
    except (ValueError, KeyError, TypeError) as error:
        raise DataError(f"{file}: not a privacy ledger ({error})") from None
    depends, n_train, domain = "", None, domain_of(None, "")
    if spec is not None:
        depends = releases_n(spec.method)
        meta, where = _prepared_meta(spec)
        domain = domain_of(meta, where)
        if meta is not None:
            n_train = min(meta["shapes"]["train"][0], spec.params.get("max_train") or meta["shapes"]["train"][0])
    target = "none" if ledger.target_epsilon is None else num(ledger.target_epsilon)
    lines = [
        f"ledger: {file}" + (f" (run {spec.run_id}, method {spec.method})" if spec else ""),
        f"headline: ε = {num(ledger.epsilon)} ({ledger.headline} accounting) at δ = {num(ledger.delta)}; "
        f"target ε {target}",
        f"paper: {accounting_line(ledger.paper)}",
        "sound: " + (accounting_line(ledger.sound) if ledger.sound is not None else "none (no proven bound)"),
    ]
    for kind, accounting in (("paper", ledger.paper), ("sound", ledger.sound)):
        if accounting is not None and (kind == "paper" or accounting.mechanisms != ledger.paper.mechanisms):
            lines += [f"mechanisms ({kind}):", *(f"  {mechanism_line(m)}" for m in accounting.mechanisms)]
    if ledger.not_dp:
        lines.append(f"not DP: {ledger.not_dp}")
    if ledger.randomness:
        lines.append(f"randomness: {ledger.randomness}")
    lines.append(public_line(ledger, depends, n_train, domain))
    return "\n".join(lines)
