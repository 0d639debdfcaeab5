"""The engine-level one-run audit of every DP-SGD engine at a range of claimed ε (audit/dpsgd; docs/audit.md).

Each (engine, ε) is one audited training run of `dpvae.privacy.engine_audit`; the rows are ε̂ (`eps_lower`,
`eps_point`, `eps_max_certifiable`) beside the claims (`eps_claimed` = the engine's paper accounting, the
calibration target; `eps_sound`), the calibrated `noise_multiplier` and the run's `audit_seconds`.
"""

from __future__ import annotations

import pandas as pd

from dpvae.analyses import register_analysis
from dpvae.analyses.tidy import tidy


@register_analysis("dpsgd_audit")
def dpsgd_audit(name: str, experiment: dict, context: dict) -> pd.DataFrame:
    """params: epsilons, canaries, records, seed, confidence, and per engine its sample_rate, steps (groups)."""
    import torch

    from dpvae.privacy.engine_audit import ENGINES, AuditSetting, run_audit

    params = experiment["params"]
    unknown = sorted(set(params["engines"]) - set(ENGINES))
    if unknown:
        raise ValueError(f"experiments.{name}.params.engines: unknown engines {unknown} (known: {', '.join(ENGINES)})")
    torch.set_num_threads(1)
    rows = []
    for engine, setting in params["engines"].items():
        for epsilon in params["epsilons"]:
            audit = run_audit(AuditSetting(
                engine, float(epsilon), setting["sample_rate"], setting["steps"], canaries=params["canaries"],
                records=params["records"], delta=context["delta"], groups=setting.get("groups", 4),
                confidence=params.get("confidence", 0.95), seed=params.get("seed", 0)))
            base = {"experiment": name, "variant": f"engine:{engine}", "method": engine, "epsilon": epsilon,
                    "seed": params.get("seed", 0)}
            values = {"eps_lower": audit.result.lower, "eps_point": audit.result.point,
                      "eps_max_certifiable": audit.result.max_certifiable, "eps_claimed": audit.epsilon_paper,
                      "eps_sound": audit.epsilon_sound, "noise_multiplier": audit.noise_multiplier,
                      "canaries": params["canaries"], "audit_seconds": audit.seconds}
            rows += [{**base, "metric": metric, "value": value} for metric, value in values.items()]
    return tidy(rows)
