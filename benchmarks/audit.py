"""Cost of the one-run canary audit (seconds per audited run) and its verdicts, honest and with a planted bug.

    DPVAE_DATA_MIRROR=../shared/data OMP_NUM_THREADS=1 PYTHONPATH=src:tests \\
        python benchmarks/audit.py [--config tests/config/smoke.yaml] [--planted] [--only dp-vae,privbayes] \\
        [--device cpu]

Runs every engine of `audit_engines` (at its first claimed ε) and every target of `audit_methods` — each
private method trained once through its own entry point in a canary session — with the settings of
config.yaml overlaid with `--config` (Ryan's included even where that overlay excludes it). Needs the
targets' datasets prepared under <data-root>/prepared/ (any snakemake run, or `python -m dpvae prepare`).
The audited methods train on `--device` (the engine audits' toy models stay on the CPU).
`--planted` plants the test-only bug (every noise standard deviation times 0.1, the ledger unchanged;
tests/support/planted_bugs.py). Prints one line per audited run (kind, label, claimed ε, ε̂ lower / central,
the most the canaries could show, seconds, verdict) and `seconds_per_audited_run=` (the mean). The seconds
include training; the audit's own overhead is the canary layer and one estimator call (jax-privacy,
~1 s for 1,000 canaries).

Measured (this repository's shared 2-core machine, nice 19, load ~20, smoke overlay; docs/audit.md has the
table): `seconds_per_audited_run=19.8 runs=17 planted=none` and `seconds_per_audited_run=17.7 runs=17
planted=noise x0.1`; every honest run at or below its claim, every planted run above.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time

import torch

from dpvae.analyses.audit import target_spec, train_audited
from dpvae.config import load_config
from dpvae.devices import device_argument, device_name
from dpvae.paths import REPO_ROOT
from dpvae.privacy.engine_audit import AuditSetting, run_audit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(REPO_ROOT / "tests" / "config" / "smoke.yaml"))
    parser.add_argument("--data-root", default="data")
    parser.add_argument("--planted", action="store_true", help="plant the noise x0.1 bug")
    parser.add_argument("--only", default="", help="comma-separated labels (engines or method targets)")
    device_argument(parser)
    args = parser.parse_args()
    print(f"device={device_name(args.device)}", flush=True)
    from support.planted_bugs import scaled_noise

    torch.set_num_threads(1)
    config = load_config([REPO_ROOT / "config.yaml", args.config])
    engines, methods = (config["experiments"][e]["params"] for e in ("audit_engines", "audit_methods"))
    only = set(filter(None, args.only.split(",")))
    seconds = []

    def report(kind: str, label: str, claimed: float, lower: float, point: float, most: float, took: float) -> None:
        seconds.append(took)
        verdict = "ABOVE the claim" if lower > claimed else "at or below the claim"
        print(
            f"{kind:6s} {label:16s} claimed={claimed:.3f} lower={lower:.3f} central={point:.3f} "
            f"max_certifiable={most:.2f} seconds={took:.1f} {verdict}",
            flush=True,
        )

    bug = scaled_noise(0.1) if args.planted else contextlib.nullcontext()
    with bug, tempfile.TemporaryDirectory() as tmp:
        for engine, s in engines["engines"].items():
            if only and engine not in only:
                continue
            started = time.time()
            audit = run_audit(
                AuditSetting(
                    engine,
                    float(engines["epsilons"][0]),
                    s["sample_rate"],
                    s["steps"],
                    canaries=engines["canaries"],
                    records=engines["records"],
                    delta=config["delta"],
                    groups=s.get("groups", 4),
                )
            )
            report(
                "engine",
                engine,
                audit.epsilon_paper,
                audit.result.lower,
                audit.result.point,
                audit.result.max_certifiable,
                time.time() - started,
            )
        for label in methods["targets"]:
            if only and label not in only:
                continue
            started = time.time()
            record = train_audited(
                target_spec(
                    label,
                    methods,
                    f"{tmp}/{label}",
                    delta=config["delta"],
                    data_root=args.data_root,
                    device=args.device,
                )
            )
            report(
                "method",
                label,
                record["epsilon_claimed"],
                record["lower"],
                record["point"],
                record["max_certifiable"],
                time.time() - started,
            )
    print(
        f"seconds_per_audited_run={sum(seconds) / max(len(seconds), 1):.1f} runs={len(seconds)} "
        f"planted={'noise x0.1' if args.planted else 'none'}"
    )


if __name__ == "__main__":
    main()
