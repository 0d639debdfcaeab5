"""`python -m dpvae synth`: one synthetic dataset from one method, outside the workflow.

The data is a file (a table or image arrays, declared as under the config key `datasets`) or a built-in id.
It is prepared into the data root like the workflow's (a file under the id `<stem>-<sha256[:8]>`, so another
version of it is another dataset), trained by the workflow's own train stage (ledger, budget check, canary
audit) in `<out>.run/`, sampled by its sample stage, and the samples written to `--out` (`.csv`: the table's
columns in their own units, the label last; `.npz`: `x` and `y` as prepared) with `privacy.json` (and with
`--audit`, `audit.json`) beside them. Everything is checked before any training; a problem is one line naming
the option and value.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpvae.errors import ConfigError, DataError
from dpvae.files import atomic_write

LABEL_GUESSES = ("label", "target", "y", "class")
OUT_SUFFIXES = (".csv", ".npz")


@dataclass(frozen=True)
class Request:
    """What `dpvae synth` was asked for (the command line, typed)."""

    method: str
    data: str
    epsilon: float | None
    delta: float
    params: dict[str, Any]
    out: Path
    audit: int | None = None  # canaries, or None: no audit
    n: int | None = None  # records to draw (None: as many as the training split)
    seed: int = 0
    root: Path = Path("data")
    label: str | None = None
    positive: Any = None
    device: str = "auto"
    declare: Path | None = None  # YAML: the data's public domain and options (as a config `datasets` entry)
    allow_not_dp: bool = False  # a private method may read the domain from the data (not DP)


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """`k=v` pairs, each value read as YAML (`epochs=3`, `gen_channels=[16, 8]`, `lr=1e-3`)."""
    import yaml

    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--params {pair!r}: write key=value (e.g. epochs=3)")
        try:
            params[key] = yaml.safe_load(value)
        except yaml.YAMLError as error:
            raise ConfigError(f"--params {pair!r}: the value is not valid YAML ({error})") from None
    return params


def synth(request: Request) -> Path:
    """Check, prepare, train, sample; write the samples to `request.out` with the ledger beside them."""
    method, params, dataset, entry = _checked(request)
    prepared = _prepare(dataset, entry, request)
    run_dir = request.out.with_name(request.out.name + ".run")
    spec = _spec(request, method, params, dataset, entry, run_dir)
    from dpvae import stages
    from dpvae.data.store import load_prepared
    from dpvae.privacy.canaries import AUDIT_FILE
    from dpvae.tables import read_spec

    if not _trained(run_dir, spec, read_spec):
        shutil.rmtree(run_dir, ignore_errors=True)
        stages.train(spec)
    samples = np.load(stages.sample(run_dir, request.n or _n_train(prepared)))
    _write_samples(samples, load_prepared(prepared).meta, request.out)
    for name in ("privacy.json", AUDIT_FILE):
        if (run_dir / name).is_file():
            shutil.copyfile(run_dir / name, request.out.parent / name)
    return request.out


def _checked(request: Request) -> tuple[Any, dict, str, dict | None]:
    """The method, its parameters, the dataset id and its declaration (None: built-in), all checked."""
    from dpvae.data import declared
    from dpvae.data.registry import get_dataset
    from dpvae.methods.registry import METHODS
    from dpvae.registry import did_you_mean

    if request.out.suffix.lower() not in OUT_SUFFIXES:
        raise ConfigError(f"--out {request.out}: write .csv (a table) or .npz (x and y arrays)")
    if request.method not in METHODS or not METHODS.get(request.method).implemented:
        known = [n for n in sorted(METHODS) if METHODS.get(n).implemented]
        hint = did_you_mean(request.method, known)
        raise ConfigError(f"--method {request.method!r}: not a method{hint} (known: {', '.join(known)})")
    method = METHODS.get(request.method)
    if problems := method.Params.errors(request.params, "--params", method.name):
        raise ConfigError(problems[0].replace("config key '--params.", "--params '"))
    params = method.Params.parse(request.params, name=method.name)
    if method.private and request.epsilon is None:
        raise ConfigError(f"--epsilon: method '{method.name}' is private and needs a target epsilon")
    if request.audit is not None and not method.private:
        raise ConfigError(f"--audit: method '{method.name}' is not private; there is nothing to audit")
    path = Path(request.data)
    if path.is_file():
        entry = _declare(path, request, method.private)
        dataset = f"{re.sub(r'[^a-z0-9_.-]+', '-', path.stem.lower()).strip('-.') or 'data'}-"
        dataset += declared.sha256(path)[:8]  # another version of the file is another dataset
        facts = declared.facts(entry)
    else:
        if declared.kind_of(path) is not None:
            raise ConfigError(f"--data {request.data}: no such file")
        try:
            facts = get_dataset(request.data).facts
        except (KeyError, ValueError) as error:
            raise ConfigError(f"--data {request.data!r}: neither a file nor a dataset id ({error})") from None
        dataset, entry = request.data, None
    spent = (entry or {}).get("domain_epsilon")
    if method.private and spent is not None and request.epsilon is not None and request.epsilon <= spent:
        raise ConfigError(
            f"--epsilon {request.epsilon}: leaves nothing after the domain estimate's domain_epsilon {spent} "
            f"(--declare {request.declare})"
        )
    if request.out.suffix.lower() == ".csv" and facts is not None and facts.kind == "image":
        raise ConfigError(f"--out {request.out}: '{request.data}' holds images; write .npz")
    _check_fit(method, params, facts, request)
    return method, params.to_dict(), dataset, entry


DECLARE_KEYS = (
    "label", "labels", "positive", "domain", "domain_epsilon", "columns", "categorical", "drop", "test_fraction",
    "test_path", "layout", "description",
)  # fmt: skip


def _declare(path: Path, request: Request, private: bool) -> dict:
    """The declaration of a data file (as under the config key `datasets`: --declare's YAML, --label,
    --positive), its problems refused. A private method needs the data's public domain declared (or
    estimated, domain: estimate); reading it from the data (domain: from_data) takes --allow-not-dp."""
    from dpvae.data import declared

    entry: dict[str, Any] = {"path": str(path.resolve()), **_declaration_file(request.declare)}
    if entry.get("test_path") is not None:
        entry["test_path"] = str((request.declare.parent / entry["test_path"]).resolve())  # type: ignore[union-attr]
    if declared.kind_of(path) == "table":
        if request.label is not None:
            entry["label"] = request.label
        elif "label" not in entry:
            guess = next((c for c in declared._columns(str(path)) if c.lower() in LABEL_GUESSES), None)
            if guess is None:
                raise ConfigError(
                    f"--label: name the label column of {path} (none is called {', '.join(LABEL_GUESSES)})"
                )
            entry["label"] = guess
        if request.positive is not None:
            entry["positive"] = request.positive
    elif request.label or request.positive is not None:
        raise ConfigError(f"--label/--positive: {path} holds image arrays; their labels are its `y`")
    if request.declare is None and (request.allow_not_dp or not private):
        entry["domain"] = "from_data"
    if entry.get("domain") == "from_data" and private and not request.allow_not_dp:
        raise ConfigError(
            f"--declare {request.declare}: domain: from_data reads ranges, categories and labels from the private "
            "file, unnoised (not DP); declare them, use domain: estimate, or pass --allow-not-dp"
        )
    if request.declare is None and private and not request.allow_not_dp:
        raise ConfigError(
            f"--data {path}: a private method needs the data's public domain: --declare FILE (each column's "
            "bounds or categories and the labels, or domain: estimate with domain_epsilon), or --allow-not-dp to "
            "read it from the data (not DP; the ledger says so)"
        )
    where = f"--declare {request.declare}" if request.declare is not None else "--data"
    for problem in declared.problems("data", entry):
        raise ConfigError(
            problem.replace("config key 'datasets.data.path'", "--data").replace(
                "config key 'datasets.data.", where + " "
            )
        )
    return entry


def _declaration_file(path: Path | None) -> dict[str, Any]:
    """--declare's YAML mapping (keys as under the config key datasets.<id>, without path), or the one dataset
    of a config overlay (e.g. examples/own-data/*.yaml; its `path` is --data's)."""
    if path is None:
        return {}
    import yaml

    try:
        loaded = yaml.safe_load(path.read_text())
    except OSError as error:
        raise ConfigError(f"--declare {path}: cannot read it ({error.strerror})") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"--declare {path}: not valid YAML ({error})") from None
    if isinstance(loaded, dict) and isinstance(loaded.get("datasets"), dict):  # a config overlay: its one dataset
        if len(loaded["datasets"]) != 1:
            raise ConfigError(f"--declare {path}: its `datasets` declares {len(loaded['datasets'])} datasets, not one")
        (loaded,) = loaded["datasets"].values()
        loaded = {k: v for k, v in loaded.items() if k != "path"} if isinstance(loaded, dict) else loaded
    if not isinstance(loaded, dict):
        raise ConfigError(f"--declare {path}: a mapping of keys (columns, labels, domain, ...) is needed")
    if unknown := sorted(set(loaded) - set(DECLARE_KEYS)):
        raise ConfigError(f"--declare {path}: unknown key {unknown[0]!r} (keys: {', '.join(DECLARE_KEYS)})")
    return loaded


def _check_fit(method: Any, params: Any, facts: Any, request: Request) -> None:
    """The method takes the data, its batch fits the training split, its own size checks hold."""
    import dataclasses

    if facts is None:
        return
    if facts.kind not in method.kinds:
        raise ConfigError(
            f"--method {method.name} cannot take --data {request.data}: it trains on {' and '.join(method.kinds)} "
            f"records, and the data holds "
            + (
                f"{'x'.join(map(str, facts.record_shape))} images"
                if facts.kind == "image"
                else f"{list(facts.record_shape)} records (a table)"
            )
        )
    n_train = min(facts.n_train, getattr(params, "max_train", None) or facts.n_train)
    batch = getattr(params, "batch_size", None)
    if isinstance(batch, int) and batch > n_train:
        raise ConfigError(f"--params batch_size={batch} is larger than the {n_train} training records")
    for name, why in method.data_errors(params, dataclasses.replace(facts, n_train=n_train)):
        where = f"--params {name}" if name else f"--method {method.name}"
        raise ConfigError(f"{where} does not fit --data {request.data}: {why}")


def _prepare(dataset: str, entry: dict | None, request: Request) -> Path:
    """The prepared set in the data root (copied in, fetched from the mirror or downloaded, then prepared)."""
    from dpvae.data import declared
    from dpvae.data.registry import fetch_dataset, prepare_dataset
    from dpvae.data.store import load_prepared
    from dpvae.paths import data_mirror

    out = request.root / "prepared" / dataset
    if entry is not None:
        wanted = declared.declaration(entry)
        if (out / "meta.json").is_file() and load_prepared(out).meta.get("identity") == wanted["identity"]:
            return out
        declared.copy_in(dataset, wanted, request.root)
    elif (out / "meta.json").is_file():
        return out
    else:
        fetch_dataset(dataset, request.root, data_mirror(None))
    return prepare_dataset(dataset, request.root, seed=0)


def _spec(request: Request, method: Any, params: dict, dataset: str, entry: dict | None, run_dir: Path) -> dict:
    """A run spec as the workflow's (`dpvae.runs.run_spec`) for this one run."""
    from dpvae.data import declared

    spec: dict[str, Any] = {
        "run_id": f"synth/{dataset}/{method.name}",
        "run": str(run_dir),
        "scale": "synth",
        "dataset": dataset,
        "variant": method.name,
        "method": method.name,
        "private": method.private,
        "params": params,
        "epsilon": float(request.epsilon) if method.private else None,
        "delta": request.delta,
        "seed": request.seed,
        "device": request.device,
        "data_root": str(request.root),
    }
    if request.audit is not None:
        spec["audit"] = {"canaries": request.audit}
    if entry is not None:
        spec["data_identity"] = declared.identity(entry)
    return spec


def _trained(run_dir: Path, spec: dict, read_spec: Any) -> bool:
    """The run directory holds a finished training of exactly this spec (then it is reused)."""
    try:
        return (run_dir / "model").is_dir() and read_spec(run_dir) == spec
    except (OSError, ValueError, KeyError, DataError):
        return False


def _n_train(prepared: Path) -> int:
    import json

    return int(json.loads((prepared / "meta.json").read_text())["shapes"]["train"][0])


def _write_samples(samples: Any, meta: dict, out: Path) -> None:
    """`.npz`: the arrays as sampled; `.csv`: the table's columns in their own units, then the label."""
    x, y = samples["x"], samples["y"] if "y" in samples else None
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".npz":
        arrays = {"x": x, **({"y": y} if y is not None else {})}
        atomic_write(out, lambda tmp: np.savez_compressed(tmp, **arrays))
        return
    import pandas as pd

    columns = meta.get("columns") or [{"name": f"x{i}", "kind": "continuous"} for i in range(x.shape[1])]
    frame = pd.DataFrame({c["name"]: _unscale(x[:, i], c) for i, c in enumerate(columns)})
    if y is not None:
        names = meta.get("label_names")
        label = meta.get("label_column", "label")
        frame[label] = [names[int(v)] for v in y] if names else y
    atomic_write(out, lambda tmp: frame.to_csv(tmp, index=False))


def _unscale(values: np.ndarray, column: dict) -> Any:
    """A column back in its own units (min-max undone; a categorical column's codes back to its categories)."""
    if "min" not in column:
        return values
    raw = column["min"] + np.clip(values, 0, 1) * (column["max"] - column["min"])
    if column.get("kind") == "categorical":
        categories = column["categories"]
        return [categories[int(i)] for i in np.clip(np.rint(raw), 0, len(categories) - 1)]
    return raw
