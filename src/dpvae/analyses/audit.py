"""The engine-level one-run audit of every DP-SGD engine at a range of claimed ε (audit/dpsgd; docs/audit.md).

Each (engine, ε) is one audited training run of `dpvae.privacy.engine_audit`; the rows are ε̂ (`eps_lower`,
`eps_point`, `eps_max_certifiable`) beside the claims (`eps_claimed` = the engine's paper accounting, the
calibration target; `eps_sound`), the calibrated `noise_multiplier` and the run's `audit_seconds`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dpvae.analyses import register_analysis
from dpvae.analyses.tidy import tidy
from dpvae.config_types import Experiment
from dpvae.paths import RESULTS, audit_file, model_path
from dpvae.runspec import DEFAULT_AUDIT_CONFIDENCE, Audit, RunSpec
from dpvae.specs import AnalysisContext


@register_analysis("dpsgd_audit")
def dpsgd_audit(name: str, experiment: Experiment, context: AnalysisContext) -> pd.DataFrame:
    """params: epsilons, canaries, records, seed, confidence, and per engine its sample_rate, steps (groups)."""
    import torch

    from dpvae.privacy.engine_audit import ENGINES, AuditSetting, run_audit

    params = experiment.params
    unknown = sorted(set(params["engines"]) - set(ENGINES))
    if unknown:
        raise ValueError(f"experiments.{name}.params.engines: unknown engines {unknown} (known: {', '.join(ENGINES)})")
    torch.set_num_threads(1)
    rows = []
    for engine, setting in params["engines"].items():
        for epsilon in params["epsilons"]:
            audit = run_audit(
                AuditSetting(
                    engine,
                    float(epsilon),
                    setting["sample_rate"],
                    setting["steps"],
                    canaries=params["canaries"],
                    records=params["records"],
                    delta=context.delta,
                    groups=setting.get("groups", 4),
                    confidence=params.get("confidence", 0.95),
                    seed=params.get("seed", 0),
                )
            )
            base = {
                "experiment": name,
                "variant": f"engine:{engine}",
                "method": engine,
                "epsilon": epsilon,
                "seed": params.get("seed", 0),
            }
            values = {
                "eps_lower": audit.result.lower,
                "eps_point": audit.result.point,
                "eps_max_certifiable": audit.result.max_certifiable,
                "eps_claimed": audit.epsilon_paper,
                "eps_sound": audit.epsilon_sound,
                "noise_multiplier": audit.noise_multiplier,
                "canaries": params["canaries"],
                "audit_seconds": audit.seconds,
            }
            rows += [{**base, "metric": metric, "value": value} for metric, value in values.items()]
    return tidy(rows)


def target_spec(
    label: str, params: dict, run: Path | str, *, delta: float, data_root: str, device: str = "cpu", scale: str = ""
) -> RunSpec:
    """The run spec of target `label` of an audit experiment's `params` (`targets.<label>`: dataset, method,
    params), trained at its epsilon with its canaries (the analysis and benchmarks/audit.py build it here)."""
    target = params["targets"][label]
    return RunSpec.standalone(
        f"audit/{label}",
        str(run),
        scale=scale,
        dataset=target["dataset"],
        variant=label,
        method=target["method"],
        params=target.get("params", {}),
        epsilon=float(params["epsilon"]),
        delta=delta,
        seed=params.get("seed", 0),
        device=device,
        data_root=data_root,
        audit=Audit(params["canaries"], params.get("confidence", DEFAULT_AUDIT_CONFIDENCE)),
    )


def train_audited(spec: RunSpec) -> dict:
    """Train one run through its method's own entry point (`method.train`) inside a canary session; write its
    ledger (privacy.json) and audit.json into `spec.run`; return the audit record. The budget is checked
    as in the train stage (epsilon <= target exactly)."""
    import random

    import numpy as np
    import torch

    from dpvae.files import write_json
    from dpvae.methods.registry import get_method, run_context
    from dpvae.privacy.canaries import CanarySession
    from dpvae.privacy.ledger import check_budget

    method = get_method(spec.method)
    if not method.private:
        raise ValueError(f"method '{method.name}' is not private: nothing to audit")
    if spec.audit is None:
        raise ValueError(f"run {spec.run_id}: its spec names no audit (canaries)")
    run = Path(spec.run)
    ctx = run_context(spec, model_dir=model_path(run))
    model_path(run).mkdir(parents=True, exist_ok=True)
    seed = ctx.seed_for("global")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    session = CanarySession(spec.audit.canaries, ctx.seed_for("canaries"), spec.audit.level)
    with session.active():
        ledger = method.train(ctx)
    check_budget(ledger, spec.epsilon, spec.delta)
    ledger.write(ctx.ledger_path)
    record = session.record(ledger, spec.delta)
    write_json(audit_file(run), record)
    return record


@register_analysis("method_audit")
def method_audit(name: str, experiment: Experiment, context: AnalysisContext) -> pd.DataFrame:
    """Every private method trained once through its own entry point with canaries (docs/audit.md).

    params: epsilon, canaries, seed, confidence, `targets` {label: {method, dataset, params}} and `exclude`
    (labels left out at this scale). The runs
    (privacy.json and audit.json) land in results/<scale>/audit/<label>/ beside the table."""
    import torch

    from dpvae.privacy.canaries import audit_rows

    params = experiment.params
    torch.set_num_threads(1)
    runs = Path(context.out).parent.parent / "audit" if context.out else Path(RESULTS, "audit")
    rows = []
    unknown = sorted(set(params.get("exclude", [])) - set(params["targets"]))
    if unknown:
        raise ValueError(f"experiments.{name}.params.exclude: unknown targets {unknown}")
    for label, target in params["targets"].items():
        if label in params.get("exclude", []):
            continue
        if target["dataset"] not in experiment.datasets:
            raise ValueError(
                f"experiments.{name}.params.targets.{label}.dataset: '{target['dataset']}' is not "
                f"in the experiment's datasets {list(experiment.datasets)} (they are its prepared inputs)"
            )
        seed = params.get("seed", 0)
        spec = target_spec(
            label,
            params,
            runs / label,
            delta=context.delta,
            data_root=context.data_root,
        )
        record = train_audited(spec)
        base = {
            "experiment": name,
            "dataset": target["dataset"],
            "variant": label,
            "method": target["method"],
            "epsilon": params["epsilon"],
            "seed": seed,
        }
        rows += [{**base, **row} for row in audit_rows(record)]
    return tidy(rows)
