"""The workflow's stages as plain functions (the CLI and the Snakemake rules call these).

stage1 per shared first stage (DP²-VAE's encoders); train -> sample -> evaluate per run; reference per
(dataset, metric); aggregate per (experiment, dataset) (in `dpvae.tables`: bookkeeping without torch);
analyze per analysis experiment; render per item; gather per item id. Outputs are written atomically, so
an interrupted job leaves nothing that looks finished. Every stage after `train` reads the run's spec from
its `train.json`; aggregate and render read their inputs from small spec files, never from argv.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpvae import randomness
from dpvae.analyses import TIDY_COLUMNS, run_analysis
from dpvae.data.store import save_npz
from dpvae.devices import device_name, repeatable, resolve_device
from dpvae.errors import DataError, NotBuiltError
from dpvae.eval.base import EvalContext
from dpvae.eval.registry import METRICS
from dpvae.files import atomic_directory, atomic_write, write_json
from dpvae.methods.base import RunContext, stage1_context
from dpvae.methods.registry import get_method, run_context
from dpvae.models import precision
from dpvae.paths import audit_file, checkpoint_file, model_path, partial_file, stage1_record, train_record
from dpvae.provenance import git_commit, machine, sha256_json
from dpvae.runs import domain_budget, released_ledger
from dpvae.runspec import RunSpec
from dpvae.specs import AnalysisContext
from dpvae.tables import read_spec


def _seed_everything(ctx: RunContext) -> None:
    """Seed every global generator from the run (`dpvae.randomness`); on CUDA, deterministic kernels."""
    repeatable(ctx.device)
    randomness.seed_globals(ctx.spec)


def train(spec: RunSpec) -> Path:
    """Train one run: <run>/model/ (renamed into place when complete), privacy.json, train.json; an audited
    run (spec key `audit`, docs/audit.md) trains with canaries and writes audit.json beside privacy.json."""
    from dpvae.privacy.ledger import check_budget

    run_dir = Path(spec.run)
    method = get_method(spec.method)
    started, commit = time.time(), git_commit()  # the code that trains, not what the checkout holds at the end
    if spec.audit and not spec.private:
        raise DataError(f"run {spec.run_id}: only a private run can be audited (variant '{spec.variant}')")
    budgeted, fitted = domain_budget(spec)  # what the method may spend (the domain estimate is paid first)
    with atomic_directory(model_path(run_dir)) as partial:
        ctx = run_context(budgeted, model_dir=partial)
        _seed_everything(ctx)
        session = _canary_session(ctx)
        with session.active() if session else contextlib.nullcontext(), precision.training(ctx.precision):
            ledger = method.train(ctx)
        if spec.private:
            if ledger is None:
                raise RuntimeError(f"private method '{method.name}' returned no privacy ledger")
            ledger = released_ledger(ledger, fitted, spec)
            check_budget(ledger, spec.epsilon, spec.delta)  # no tolerance: epsilon <= target exactly
            ledger.write(ctx.ledger_path)
            if session:
                write_json(audit_file(run_dir), session.record(ledger, spec.delta))
        else:
            write_json(
                ctx.ledger_path,
                {
                    "private": False,
                    "epsilon": None,
                    "delta": None,
                    "method": method.name,
                    "note": "non-private run: no differential-privacy guarantee",
                },
            )
    checkpoint_file(run_dir).unlink(missing_ok=True)  # the model is in place: a resume point is moot
    write_json(train_record(run_dir), _provenance(ctx, started, commit, spec))  # the spec as planned
    return model_path(run_dir)


def stage1(spec: RunSpec) -> Path:
    """Train a method's shared non-private first stage (`dpvae.methods.base.stage1_spec`): <dir>/model/
    (renamed into place when complete), then <dir>/stage1.json (its spec and key, seconds, device, commit)."""
    run_dir = Path(spec.run)
    method = get_method(spec.method)
    started, commit = time.time(), git_commit()
    with atomic_directory(model_path(run_dir)) as partial:
        ctx = stage1_context(spec, method, model_dir=partial)
        _seed_everything(ctx)
        summary = method.train_stage1(ctx)
    checkpoint_file(run_dir).unlink(missing_ok=True)
    write_json(stage1_record(run_dir), {"key": spec.key, **_provenance(ctx, started, commit), "summary": summary})
    return model_path(run_dir)


def _provenance(ctx: RunContext, started: float, commit: str, spec: RunSpec | None = None) -> dict[str, Any]:
    """What a train.json or stage1.json records: the spec (default: the context's) and its hash, the code,
    seconds, device, machine."""
    recorded = (ctx.spec if spec is None else spec).to_dict()
    return {
        "spec": recorded,
        "spec_sha256": sha256_json(recorded),
        "commit": commit,
        "seed": recorded["seed"],
        "scale": recorded.get("scale"),
        "seconds": round(time.time() - started, 3),
        "device": ctx.device,
        "precision": ctx.precision,
        "device_name": device_name(ctx.device),
        **machine(),
    }


def _canary_session(ctx: RunContext):
    """The canary session of an audited run (`dpvae.privacy.canaries`), or None."""
    audit = ctx.spec.audit
    if audit is None:
        return None
    from dpvae.privacy.canaries import CanarySession

    return CanarySession(audit.canaries, ctx.seed_for("canaries"), audit.level)


def sample(run_dir: str | Path, n: int | None) -> Path:
    """Draw synthetic records from a trained run into <run>/samples.npz."""
    ctx = run_context(read_spec(run_dir))
    _seed_everything(ctx)
    arrays = get_method(ctx.spec.method).sample(ctx, n)
    atomic_write(ctx.samples_path, lambda tmp: save_npz(Path(tmp), arrays))  # fixed timestamps: same bytes
    return ctx.samples_path


def evaluate(
    run_dir: str | Path, metric: str, options: dict, out: str | Path, reference: str | Path | None = None
) -> Path:
    """Compute one metric of one run into <run>/metrics/<metric>.json (+ artifacts beside it)."""
    entry = METRICS.get(metric)
    parsed = entry.Options.parse(options, key=f"evaluation.{metric}", name=metric)
    # a metric is not a release: its randomness is the seeded one (repeatable), whatever the run's noise was
    run = run_context(dataclasses.replace(read_spec(run_dir), randomness=None))
    _seed_everything(run)
    ctx = EvalContext(run, parsed, Path(out).parent, Path(reference) if reference else None)
    started, commit = time.time(), git_commit()
    with precision.ieee_fp32():  # a metric is computed alike on every device, whatever the run's precision
        rows = entry(ctx)
    write_json(
        Path(out),
        {
            "metric": metric,
            "options": parsed.to_dict(),
            "rows": rows,
            "seconds": round(time.time() - started, 3),
            "commit": commit,
        },
    )
    return Path(out)


def reference(data_dir: str | Path, metric: str, options: dict, out: str | Path, device: str = "auto") -> Path:
    """A metric's cached per-dataset input (e.g. FID's real-image statistics) into `out` (.npz), computed on
    `device` (`auto`: CUDA when available, as a run's); a killed job's partial result beside `out` is resumed."""
    entry = METRICS.get(metric)
    parsed = entry.Options.parse(options, key=f"evaluation.{metric}", name=metric)
    if entry.reference is None:
        raise NotBuiltError(f"metric '{metric}' has no reference builder")
    resolved = resolve_device(device)
    with precision.ieee_fp32():
        arrays = entry.reference(Path(data_dir), parsed, resolved, partial_file(Path(out)))
    atomic_write(out, lambda tmp: np.savez(tmp, **arrays))
    return Path(out)


def analyze(experiment: str, context: Mapping[str, Any], out: str | Path) -> pd.DataFrame:
    """The tidy table of analysis `experiment` from its context (`Rules.analysis_context`), written to `out`."""
    typed = AnalysisContext.from_json(context, f"dpvae analyze --context (experiment '{experiment}')")
    if typed.experiment.name != experiment:
        raise DataError(f"dpvae analyze --context: holds experiment '{typed.experiment.name}', not '{experiment}'")
    table = run_analysis(dataclasses.replace(typed, out=str(out)))
    atomic_write(out, lambda tmp: table[TIDY_COLUMNS].to_csv(tmp, index=False))
    return table


def _read_table(path: str | Path) -> pd.DataFrame:
    """A tidy table an item is rendered from; one that is not CSV is a DataError naming it."""
    try:
        return pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        reason = (str(error).strip().splitlines() or [""])[0]
        raise DataError(
            f"{path}: not a readable CSV table ({type(error).__name__}: {reason}); delete it to have it rebuilt"
        ) from error


def render(spec_path: str | Path) -> None:
    """Render one item from its spec file (tables, artifacts, configuration subset, scale)."""
    from dpvae.items import get_item
    from dpvae.paths import item_prefix
    from dpvae.render.base import RenderContext, load_renderers
    from dpvae.render.output import Stamp, stamped
    from dpvae.render.spec import ItemSpec

    spec = ItemSpec.from_json(json.loads(Path(spec_path).read_text()), str(spec_path))
    item = get_item(spec.item)
    frames = {
        exp: pd.concat([_read_table(p) for p in paths], ignore_index=True) if paths else pd.DataFrame()
        for exp, paths in spec.tables.items()
    }
    seeds = sorted({int(s) for f in frames.values() if "seed" in f for s in f["seed"].dropna()})
    stamp = Stamp(scale=spec.scale, commit=git_commit(), config_sha256=sha256_json(spec.to_json()), seeds=tuple(seeds))
    renderer = load_renderers().get(item.key)
    with stamped(stamp):
        prefix = item_prefix(item.paper, item.id)
        renderer(RenderContext(item, prefix, frames, list(spec.artifacts), spec.context, dict(spec.settings)))
