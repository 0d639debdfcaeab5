"""A method on Adult through `dpvae synth` (Adult's public domain declared in a file) against its Table VI path.

    DPVAE_DATA_MIRROR=/work/shared/data python benchmarks/synth_paper_path.py --work W --epsilon 1 --seeds 0 1 2 \
        [--method p3gm] [--path paper synth] [--synth-params k=v ...] [--synth-n N] [--synth-flags ...]

The paper path: config.yaml's run of the `p3gm_tabular` experiment (variant = the method's name) on the built-in
`adult` set, trained and sampled as the workflow does (`runs.run_spec`, `stages.train`, `stages.sample`: as many
records as the training split). The synth path: Adult's rows written to W/adult.csv (the 14 features and the
income, as UCI ships them), its published domain declared in W/adult.yaml (`dpvae.data.tabular.adult_domain`:
the same bounds, categories and labels as the built-in set) and `synth.synth` on them with `--seed` (repeatable,
so not DP: a measurement, not a release). Both scored by Table VI's evaluation (`tabular_classifiers`' four
classifiers trained on the synthetic rows, their mean AUROC on the path's own real test split; the positive class
">50K"), with the share of ">50K" rows. One tab-separated line per run on stdout; the seeds' mean and sd last.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def declaration(work: Path) -> tuple[Path, Path]:
    """Adult's rows as a CSV and its published domain as a --declare file (written once)."""
    import yaml

    from dpvae.data import tabular

    csv, declared = work / "adult.csv", work / "adult.yaml"
    if not csv.is_file():
        frame = tabular.read_adult(Path(os.environ["DPVAE_DATA_MIRROR"]) / "adult")
        frame.to_csv(csv, index=False)
    domain = tabular.adult_domain(keep_unknown=True)
    columns = {c.name: c.declared() for c in domain.columns}
    text = {"label": "income", "labels": list(domain.labels), "positive": ">50K", "columns": columns}
    declared.write_text(yaml.safe_dump(text, sort_keys=False))
    return csv, declared


def paper_run(method: str, epsilon: float, seed: int, work: Path) -> tuple[dict, dict]:
    """Train and sample the Table VI run; (its samples, its prepared data's test split)."""
    from dpvae import stages
    from dpvae.config import load_config
    from dpvae.data.registry import fetch_dataset, prepare_dataset
    from dpvae.data.store import load_prepared
    from dpvae.paths import prepared_dir, prepared_meta
    from dpvae.runs import Run, run_spec

    root = work / "data"
    if not prepared_meta(root, "adult").is_file():
        fetch_dataset("adult", root, os.environ["DPVAE_DATA_MIRROR"])
        prepare_dataset("adult", root, seed=0)
    config = load_config([ROOT / "config.yaml"], {"data": {"root": str(root)}})
    spec = run_spec(config, Run("adult", method, f"{epsilon:g}", seed))
    run_dir = work / f"paper-{method}-e{epsilon:g}-s{seed}"
    spec = dataclasses.replace(spec, run=str(run_dir))
    stages.train(spec)
    samples = np.load(stages.sample(run_dir, None))
    data = load_prepared(prepared_dir(root, "adult"))
    return {k: samples[k] for k in samples.files}, {"x": data.test.x, "y": data.test.y}


def synth_run(method: str, epsilon: float, seed: int, work: Path, args: argparse.Namespace) -> tuple[dict, dict]:
    """Release through `synth` (kept workspace); (its samples, its prepared data's test split)."""
    from dpvae import synth
    from dpvae.data.store import load_prepared
    from dpvae.paths import prepared_dir, samples_file

    csv, declared = declaration(work)
    out = work / f"synth-{method}-e{epsilon:g}-s{seed}.csv"
    request = synth.Request(
        method=method,
        data=str(csv),
        epsilon=epsilon,
        delta=1e-5,
        params=synth.parse_params(args.synth_params),
        out=out,
        n=args.synth_n,
        seed=seed,
        declare=declared,
        keep_work=True,
        force=True,
        quality_report=False,
        calibrate_sound=not args.no_calibrate_sound,
        headline=args.headline,
    )
    synth.synth(request)
    work_dir = synth.workspace(request)
    samples = np.load(samples_file(work_dir / "run"))
    data = load_prepared(prepared_dir(work_dir / "data", synth._dataset_id(request, {}, work_dir / "data")))
    return {k: samples[k] for k in samples.files}, {"x": data.test.x, "y": data.test.y}


def auroc(samples: dict, test: dict, seed: int) -> float:
    from dpvae.eval.tabular_classifiers import classifier_rows

    rows = classifier_rows(samples["x"], samples["y"], test["x"], test["y"], seed)
    return next(r["value"] for r in rows if r["metric"] == "auroc" and r.get("classifier") == "mean4")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--method", default="p3gm")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--path", nargs="+", default=["paper", "synth"], choices=["paper", "synth"])
    parser.add_argument("--synth-params", nargs="*", default=[])
    parser.add_argument(
        "--synth-n",
        type=int,
        default=None,
        help="records drawn (default: synth's, the training N under the sound headline)",
    )
    parser.add_argument("--no-calibrate-sound", action="store_true")
    parser.add_argument("--headline", default="sound", choices=["sound", "paper"])
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    for path in args.path:
        found = []
        for seed in args.seeds:
            started = time.time()
            run = paper_run if path == "paper" else lambda *a: synth_run(*a, args)
            samples, test = run(args.method, args.epsilon, seed, args.work)
            found.append(auroc(samples, test, seed))
            print(
                f"{path}\tε={args.epsilon:g}\tseed {seed}\tn {len(samples['y'])}\tAUROC {found[-1]:.4f}\t"
                f">50K {samples['y'].mean():.3f}\t{time.time() - started:.0f} s",
                flush=True,
            )
        spread = np.std(found, ddof=1) if len(found) > 1 else 0.0
        print(f"{path}\tε={args.epsilon:g}\tmean {np.mean(found):.4f} ± {spread:.4f}")


if __name__ == "__main__":
    sys.exit(main())
