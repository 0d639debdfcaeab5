"""The workflow's stages as plain functions (the CLI and the Snakemake rules call these).

train -> sample -> evaluate per run; aggregate per (experiment, dataset); analyze per analysis experiment;
render per item; gather per item id. Outputs are written atomically, so an interrupted job leaves
nothing that looks finished.
"""

from __future__ import annotations

import json
import os
import platform
import random
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dpvae.analyses import TIDY_COLUMNS, run_analysis, tidy
from dpvae.methods.base import RunContext
from dpvae.methods.registry import get_method
from dpvae.render.output import atomic_write


def _seed_everything(ctx: RunContext) -> None:
    import torch

    seed = ctx.seed_for("global")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _write_json(path: Path, payload: dict) -> None:
    atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(payload, indent=2, default=str) + "\n"))


def train(spec: dict) -> Path:
    """Train one run: <run>/model/ (renamed into place when complete), privacy.json, train.json."""
    from dpvae.privacy.ledger import check_budget

    run_dir = Path(spec["run"])
    run_dir.mkdir(parents=True, exist_ok=True)
    final = run_dir / "model"
    partial = run_dir / f"model.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    ctx = RunContext(spec, run_dir, extra={"model_dir": partial})
    method = get_method(spec["method"])
    _seed_everything(ctx)
    started = time.time()
    try:
        ledger = method.train(ctx)
        if spec["private"]:
            if ledger is None:
                raise RuntimeError(f"private method '{method.name}' returned no privacy ledger")
            check_budget(ledger, spec["epsilon"], spec["delta"])  # no tolerance: epsilon <= target exactly
            ledger.write(ctx.ledger_path)
        else:
            _write_json(ctx.ledger_path, {"private": False, "epsilon": None, "delta": None, "method": method.name,
                                          "note": "non-private run: no differential-privacy guarantee"})
        shutil.rmtree(final, ignore_errors=True)
        partial.mkdir(parents=True, exist_ok=True)
        os.replace(partial, final)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    _write_json(run_dir / "train.json", {
        "spec": spec, "seconds": round(time.time() - started, 3), "device": ctx.device,
        "python": platform.python_version(), "host": platform.node(),
    })
    return final


def sample(spec: dict, n: int | None) -> Path:
    """Draw synthetic records from a trained run into <run>/samples.npz."""
    ctx = RunContext(spec, Path(spec["run"]))
    _seed_everything(ctx)
    arrays = get_method(spec["method"]).sample(ctx, n)
    atomic_write(ctx.samples_path, lambda tmp: np.savez_compressed(tmp, **arrays))
    return ctx.samples_path


def evaluate(spec: dict, metric: str, options: dict, out: str | Path) -> Path:
    """Compute one metric of one run into <run>/metrics/<metric>.json (+ artifacts beside it)."""
    from dpvae.eval.registry import METRICS

    ctx = RunContext(spec, Path(spec["run"]))
    _seed_everything(ctx)
    with np.load(ctx.samples_path) as loaded:
        samples = dict(loaded)
    rows = METRICS[metric](ctx, samples, options, Path(out).parent)
    _write_json(Path(out), {"metric": metric, "options": options, "rows": rows})
    return Path(out)


def aggregate(experiment: str, exp: dict, runs: list[dict], out: str | Path) -> pd.DataFrame:
    """One tidy table of every metric of every run of an experiment on one dataset (+ the spent epsilon)."""
    sweep_name = (exp.get("sweep") or {}).get("name")
    rows = []
    for run in runs:
        base = {"experiment": experiment, "dataset": run["dataset"], "variant": run["variant"],
                "method": run["method"], "epsilon": run["epsilon"], "seed": run["seed"],
                "sweep": sweep_name, "point": run["variant"].split("=", 1)[1] if sweep_name else None}
        ledger = json.loads((Path(run["run"]) / "privacy.json").read_text())
        if ledger.get("epsilon") is not None:
            rows.append({**base, "metric": "epsilon_spent", "value": ledger["epsilon"]})
            for kind in ("paper", "sound"):
                if ledger.get(kind):
                    rows.append({**base, "metric": f"epsilon_spent_{kind}", "value": ledger[kind]["epsilon"]})
        for metric in exp["metrics"]:
            result = json.loads((Path(run["run"]) / "metrics" / f"{metric}.json").read_text())
            rows += [{**base, **row} for row in result["rows"]]
    table = tidy(rows)
    atomic_write(out, lambda tmp: table.to_csv(tmp, index=False))
    return table


def analyze(experiment: str, context: dict, out: str | Path) -> pd.DataFrame:
    table = run_analysis(experiment, context["experiments"][experiment], context)
    atomic_write(out, lambda tmp: table[TIDY_COLUMNS].to_csv(tmp, index=False))
    return table


def render(item_key: str, context: dict, tables: dict[str, list[str]], artifacts: list[str]) -> None:
    """Render one item from its experiments' tidy tables (experiment -> table paths, concatenated)."""
    from dpvae.items import get_item
    from dpvae.paths import item_prefix
    from dpvae.render.items import RENDERERS, RenderContext

    item = get_item(item_key)
    frames = {exp: pd.concat([pd.read_csv(p) for p in paths], ignore_index=True) for exp, paths in tables.items()}
    RENDERERS[item_key](RenderContext(item, item_prefix(item.paper, item.id), frames, artifacts, context))
