"""Methods on Adult through `dpvae synth` (Adult's public domain declared in a file) against their Table VI path.

    DPVAE_DATA_MIRROR=../shared/data python benchmarks/synth_paper_path.py --work W --epsilon 1 10 --seeds 0 1 2 \
        [--method p3gm mst ...] [--path paper synth] [--synth-params k=v ...] [--paper-params k=v ...] \
        [--synth-n N] [--out T.tsv]

The paper path: config.yaml's run of the `p3gm_tabular` experiment (variant = the method's name) on the built-in
`adult` set, trained and sampled as the workflow does (`runs.run_spec`, `stages.train`, `stages.sample`: as many
records as the training split). The synth path: Adult's rows written to W/adult.csv (the 14 features and the
income, as UCI ships them), its published domain declared in W/adult.yaml (`dpvae.data.tabular.adult_domain`:
the same bounds, categories and labels as the built-in set) and `synth.synth` on them with `--seed` (repeatable,
so not DP: a measurement, not a release). Both scored by Table VI's evaluation (`tabular_classifiers`' four
classifiers trained on the synthetic rows, their mean AUROC on the path's own real test split; the positive class
">50K"), by the 1-way and 2-way TVD against that test split (`synth_fidelity.py`'s: 16 bins a numeric column, the
label included), with the share of ">50K" rows, the run's ledger (paper and sound ε) and its train.json's device
and commit. One tab-separated line per run on stdout, and appended to --out, where a run already there is not run
again (a campaign resumes); each (path, method, ε)'s mean and sd over the seeds last, from every line of --out.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import itertools
import multiprocessing
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


def paper_run(
    method: str, epsilon: float, seed: int, work: Path, args: argparse.Namespace
) -> tuple[dict, dict, Path, list[dict]]:
    """Train and sample the Table VI run (config.yaml's parameters, `--paper-params` over them); (its samples, its
    prepared test split, its run directory, its columns)."""
    from dpvae import stages, synth
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
    overrides = synth.parse_params(args.paper_params)
    tag = "".join(f"-{key}={value}" for key, value in sorted(overrides.items()))
    run_dir = work / f"paper-{method}-e{epsilon:g}-s{seed}{tag}"
    spec = dataclasses.replace(spec, run=str(run_dir), params={**spec.params, **overrides})
    stages.train(spec)
    samples = np.load(stages.sample(run_dir, None))
    data = load_prepared(prepared_dir(root, "adult"))
    return {k: samples[k] for k in samples.files}, {"x": data.test.x, "y": data.test.y}, run_dir, data.meta["columns"]


def synth_run(
    method: str, epsilon: float, seed: int, work: Path, args: argparse.Namespace
) -> tuple[dict, dict, Path, list[dict]]:
    """Release through `synth` (kept workspace); (its samples, its prepared test split, its run, its columns)."""
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
        work=out.with_name(out.name + ".work"),  # in W, beside the release (a benchmark's, not a data holder's)
        keep_work=True,
        force=True,
        quality_report=False,
        calibrate_sound=not args.no_calibrate_sound,
        headline=args.headline,
    )
    synth.synth(request)
    work_dir = synth.workspace(request)
    samples = np.load(samples_file(work_dir / "run"))
    data = load_prepared(prepared_dir(work_dir / "data", synth._dataset_id(request, {})))
    test = {"x": data.test.x, "y": data.test.y}
    return {k: samples[k] for k in samples.files}, test, work_dir / "run", data.meta["columns"]


def auroc(samples: dict, test: dict, seed: int) -> float:
    from dpvae.eval.tabular_classifiers import classifier_rows

    rows = classifier_rows(samples["x"], samples["y"], test["x"], test["y"], seed)
    return next(r["value"] for r in rows if r["metric"] == "auroc" and r.get("classifier") == "mean4")


def tvds(samples: dict, test: dict, columns: list[dict]) -> tuple[float, float]:
    """The 1-way and 2-way TVD of the samples against the real test split (synth_fidelity.py's binning)."""
    from synth_fidelity import codes, tvd  # beside this script, on its sys.path

    return tvd(codes(samples["x"], samples["y"], columns), codes(test["x"], test["y"], columns))


FIELDS = (
    *("path", "method", "epsilon", "seed", "n", "auroc", "tvd1", "tvd2", "positive", "paper_eps", "sound_eps", "s"),
    *("device", "commit"),  # the run's own train.json: where it trained, and the code
)


def measure(path: str, method: str, epsilon: float, seed: int, args: argparse.Namespace) -> dict:
    """One run of one path, scored; its line's fields."""
    import json

    from dpvae.paths import ledger_file, train_record

    started = time.time()
    run = paper_run if path == "paper" else synth_run
    samples, test, run_dir, columns = run(method, epsilon, seed, args.work, args)
    ledger = json.loads(ledger_file(run_dir).read_text())
    trained = json.loads(train_record(run_dir).read_text())
    one, two = tvds(samples, test, columns)
    return {
        "path": path,
        "method": method,
        "epsilon": f"{epsilon:g}",
        "seed": str(seed),
        "n": str(len(samples["y"])),
        "auroc": f"{auroc(samples, test, seed):.4f}",
        "tvd1": f"{one:.4f}",
        "tvd2": f"{two:.4f}",
        "positive": f"{samples['y'].mean():.3f}",
        "paper_eps": f"{ledger['paper']['epsilon']:.3f}",
        "sound_eps": f"{ledger['sound']['epsilon']:.3f}",
        "s": f"{time.time() - started:.0f}",
        "device": trained["device_name"],
        "commit": trained["commit"],
    }


def measured(path: str, method: str, epsilon: float, seed: int, args: argparse.Namespace) -> dict:
    """`measure` in a fresh process, each run its own: one process that had released AIM twice (XLA's compiled
    programs kept in it) had no memory left to compile a third and was killed (2 Dec 2026, 24 GiB)."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        return pool.submit(measure, path, method, epsilon, seed, args).result()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--method", nargs="+", default=["p3gm"])
    parser.add_argument("--epsilon", type=float, nargs="+", default=[1.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--path", nargs="+", default=["paper", "synth"], choices=["paper", "synth"])
    parser.add_argument("--synth-params", nargs="*", default=[])
    parser.add_argument("--paper-params", nargs="*", default=[], help="k=v over the Table VI run's parameters")
    parser.add_argument(
        "--synth-n",
        type=int,
        default=None,
        help="records drawn (default: synth's, the training N under the sound headline)",
    )
    parser.add_argument("--no-calibrate-sound", action="store_true")
    parser.add_argument("--headline", default="sound", choices=["sound", "paper"])
    parser.add_argument("--out", type=Path, help="the runs' lines, appended; a run found there is not run again")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    lines = []
    if args.out is not None and args.out.is_file():
        lines = [dict(zip(FIELDS, line.split("\t"))) for line in args.out.read_text().splitlines()[1:]]
    done = {(r["path"], r["method"], r["epsilon"], r["seed"]) for r in lines}
    for method, epsilon, path, seed in itertools.product(args.method, args.epsilon, args.path, args.seeds):
        if (path, method, f"{epsilon:g}", str(seed)) in done:
            continue
        row = measured(path, method, epsilon, seed, args)
        lines.append(row)
        print("\t".join(row[f] for f in FIELDS), flush=True)
        if args.out is not None:
            header = "" if args.out.is_file() else "\t".join(FIELDS) + "\n"
            with args.out.open("a") as out:
                out.write(header + "\t".join(row[f] for f in FIELDS) + "\n")
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for row in lines:
        groups.setdefault((row["path"], row["method"], row["epsilon"]), []).append(row)
    for (path, method, epsilon), rows in sorted(groups.items()):
        summary = []
        for field in ("auroc", "tvd1", "tvd2"):
            values = np.array([float(r[field]) for r in rows])
            spread = np.std(values, ddof=1) if len(values) > 1 else 0.0
            summary.append(f"{field} {values.mean():.4f} ± {spread:.4f}")
        print(f"{path}\t{method}\tε={epsilon}\tn={len(rows)} seeds\t" + "\t".join(summary))


if __name__ == "__main__":
    sys.exit(main())
