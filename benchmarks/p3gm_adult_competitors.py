"""What sets PrivBayes' and DP-GM's Adult cells of P3GM Tables VI and VIII (docs/p3gm.md, the open causes).

    DPVAE_DATA_MIRROR=/work/shared/data python benchmarks/p3gm_adult_competitors.py --data-root data \\
        [--part privbayes kmeans dpgm] [--seeds 5] [--dpgm-seeds 0 1 2 3 4] [--rff-dim 1000]

Needs `<data-root>/prepared/adult-refcode` (`python -m dpvae fetch --source adult --root R` and `python -m dpvae
prepare --dataset adult-refcode --root R --seed 0`). The recorded Adult runs (reproductions/p3gm.csv) predate the
public domains: they trained under the id `adult` on what is now `adult-refcode`, so every run here is config.yaml's
run spec of `adult` (its seed streams are the recorded runs') reading `adult-refcode`'s prepared files. One line per
(part, setting, seed), tab-separated, on stdout; every number is seeded (same command, same output).

* privbayes: config.yaml's PrivBayes run of each seed (degree 2, 20 bins, ε = 1 split in halves), its network
  drawn once, then its conditionals with the Laplace noise on counts as the method adds it, (d−k)/(ε/2)
  (DataSynthesizer ≥ 0.1.7), as DataSynthesizer ≤ 0.1.6 added it, 2(d−k)/(N·ε/2), and without noise; then the
  method's run at degree 1 and at ε = 2, 4, 8. Columns: the conditionals' Laplace scale, `tvd2` (config.yaml's
  binning), `tvd2` with the notebook's cells and with the notebook's single label column, AUROC and AUPRC
  (mean of the four classifiers, ">50K" positive, as recorded), the share of ">50K" records.
* kmeans: DP-GM's DP kernel k-means as its training runs it (the run's stream, σ of 10 % of ε): the norm of the
  records' mean feature (where a random first partition puts every centre) against the norm of the noise of a
  first centre (σ·√features over N/k records), and the clusters holding more than 5 % of the records, each with its
  share of ">50K" records; for the recorded seeds and, at `rff_dim` 100 and at 30 % of ε for the clustering, for
  the same seeds.
* dpgm: whole DP-GM runs (the method's train and sample) of `--dpgm-seeds` at `--rff-dim`, scored as recorded.
  About 2-8 minutes a run on one core.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from dpvae.config import load_config
from dpvae.paths import REPO_ROOT, model_path, prepared_dir, prepared_meta
from dpvae.runs import Run, run_spec
from dpvae.stages import _seed_everything, run_context

EPSILONS = (2.0, 4.0, 8.0)
SCORES = ("tvd2", "tvd2_notebook", "tvd2_nb_single", "auroc", "auprc", "share_gt50k")  # the columns of `scores`


def context(config: dict, variant: str, seed: int, root: Path, run_dir: Path, **params):
    """The recorded Adult run's context (spec of `adult`, data of `adult-refcode`), params overridden."""
    spec = run_spec(config, Run("adult", variant, "1", seed))
    spec = replace(spec, run=str(run_dir), data_root=str(root), params={**spec.params, **params})
    ctx = run_context(spec, model_dir=model_path(run_dir))
    _seed_everything(ctx)
    return ctx


def scores(ctx, x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """The recorded metrics of synthetic records: tvd2 three ways, mean4 AUROC / AUPRC, share of '>50K'."""
    from dpvae.eval.marginals import data_matrix, tvd_2way
    from dpvae.eval.tabular_classifiers import classifier_rows

    data = ctx.data
    real, synthetic = data_matrix(data.train.x, data.train.y, 2), data_matrix(x, y, 2)
    single = (data_matrix(data.train.x, data.train.y, 2, "single"), data_matrix(x, y, 2, "single"))
    rows = classifier_rows(x, y, data.test.x, data.test.y, ctx.seed_for("classifiers"))
    mean4 = {r["metric"]: r["value"] for r in rows if r.get("classifier") == "mean4"}
    values = (
        tvd_2way(real, synthetic),
        tvd_2way(real, synthetic, binning="notebook"),
        tvd_2way(*single, binning="notebook"),
        mean4["auroc"],
        mean4["auprc"],
        float(np.mean(y)),
    )
    return dict(zip(SCORES, map(float, values)))


def line(*fields) -> None:
    print("\t".join(f"{f:.4f}" if isinstance(f, float) else str(f) for f in fields), flush=True)


def privbayes_part(config: dict, root: Path, seeds: list[int], tmp: Path) -> None:
    from dpvae.methods.marginals import privbayes
    from dpvae.methods.marginals.discretize import build_discretizer

    line("part", "setting", "seed", "laplace_scale", *SCORES)
    for seed in seeds:
        for setting, degree, epsilon in [("k=2 eps=1", 2, 1.0), ("k=1 eps=1", 1, 1.0)] + [
            (f"k=2 eps={e:g}", 2, e) for e in EPSILONS
        ]:
            ctx = context(config, "privbayes", seed, root, tmp / "privbayes", degree=degree)
            p, data = ctx.params, ctx.data
            discretizer = build_discretizer(data.train.x, data.meta, 2, p.histogram_bins, p.pixel_bins)
            codes = discretizer.encode(data.train.x, data.train.y)
            n, half = len(codes), epsilon / 2
            rng = ctx.rng("privbayes")  # the method's stream: the network and the ε = 1 noise are the method's own
            root_attribute, network = privbayes.greedy_network(codes, discretizer.sizes, degree, half, rng)
            noises = [("", half)]
            if setting == "k=2 eps=1":  # the same network, the conditionals' noise as other versions add it
                noises += [(" datasynthesizer<=0.1.6", half * n / 2), (" no noise", 0.0)]
            state = rng.bit_generator.state
            for suffix, epsilon_conditionals in noises:
                rng.bit_generator.state = state
                tables, scale = privbayes.noisy_conditionals(
                    codes, discretizer.sizes, root_attribute, network, epsilon_conditionals, rng
                )
                model = privbayes.PrivBayesModel(root_attribute, network, tables, discretizer.sizes)
                sampler = ctx.rng("privbayes-sample")
                x, y = discretizer.decode(privbayes.sample(model, n, sampler), sampler)
                s = scores(ctx, x, y)
                line("privbayes", setting + suffix, seed, float(scale), *s.values())


def kmeans_part(config: dict, root: Path, seeds: list[int], tmp: Path) -> None:
    from dpvae.methods.p3gm import store
    from dpvae.methods.p3gm.accounting import dpgm_schedule, dpgm_sigmas
    from dpvae.privacy.mechanisms.kmeans import dp_kmeans

    line(
        "part", "setting", "seed", "sigma_clustering", "mean_feature_norm", "first_centre_noise_norm",
        "clusters over 5% of N: (records, share >50K)",
    )  # fmt: skip
    for setting, params in [
        ("config.yaml", {}),
        ("rff_dim=100", {"rff_dim": 100}),
        ("cluster_budget_fraction=0.3", {"cluster_budget_fraction": 0.3}),
    ]:
        for seed in seeds:
            ctx = context(config, "dp-gm", seed, root, tmp / "dp-gm", **params)
            p, y = ctx.params, ctx.data.train.y
            vectors = store.to_vectors(ctx.data.train.x, y, 2)
            n, d = vectors.shape
            rate, steps = dpgm_schedule(p, n, ctx.spec.variant)
            sigma_c, _ = dpgm_sigmas(p, ctx.epsilon, ctx.delta, rate, steps)
            km = dp_kmeans(
                vectors, p.clusters, p.kmeans_iters, p.rff_dim, p.bandwidth * math.sqrt(d), sigma_c, sigma_c,
                ctx.rng("dp-kmeans"),
            )  # fmt: skip
            assignment = km.assign(vectors)
            signal = float(np.linalg.norm(km.feature_map(vectors).mean(axis=0)))  # a random partition's centres
            noise = sigma_c * math.sqrt(p.rff_dim) / (n / p.clusters)  # the first sums' noise over their counts
            big = [
                f"({int((assignment == j).sum())}, {y[assignment == j].mean():.3f})"
                for j in range(p.clusters)
                if (assignment == j).sum() > 0.05 * n
            ]
            line("kmeans", setting, seed, float(sigma_c), signal, noise, " ".join(big))


def dpgm_part(config: dict, root: Path, seeds: list[int], rff_dim: int, tmp: Path) -> None:
    from dpvae.methods.registry import get_method

    line("part", "setting", "seed", "clusters over 5% of N", *SCORES)
    for seed in seeds:
        ctx = context(config, "dp-gm", seed, root, tmp / f"dp-gm-{seed}", rff_dim=rff_dim)
        method = get_method("dp-gm")
        method.train(ctx)
        samples = method.sample(ctx, None)
        counts = json.loads((ctx.model_dir / "dp_gm.json").read_text())["noisy_counts"]
        big = sum(c > 0.05 * len(ctx.data.train.y) for c in counts)
        s = scores(ctx, samples["x"], samples["y"])
        line("dpgm", f"rff_dim={rff_dim}", seed, big, *s.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", default="data", help="the data root that holds adult-refcode, prepared")
    parser.add_argument("--part", nargs="+", choices=("privbayes", "kmeans", "dpgm"), default=["privbayes", "kmeans"])
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 of the privbayes and kmeans parts")
    parser.add_argument("--dpgm-seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--rff-dim", type=int, default=1000, help="random Fourier features of the dpgm part")
    args = parser.parse_args()
    prepared = prepared_dir(Path(args.data_root).resolve(), "adult-refcode")
    if not prepared_meta(Path(args.data_root).resolve(), "adult-refcode").is_file():
        parser.error(f"{prepared} is not a prepared dataset: run `python -m dpvae prepare --dataset adult-refcode`")
    config = load_config([REPO_ROOT / "config.yaml"])
    seeds = list(range(args.seeds))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        prepared_dir(root, "adult").parent.mkdir(parents=True)
        os.symlink(prepared, prepared_dir(root, "adult"))  # the recorded runs' id, the recorded runs' data
        if "privbayes" in args.part:
            privbayes_part(config, root, seeds, Path(tmp))
        if "kmeans" in args.part:
            kmeans_part(config, root, seeds, Path(tmp))
        if "dpgm" in args.part:
            dpgm_part(config, root, args.dpgm_seeds, args.rff_dim, Path(tmp))


if __name__ == "__main__":
    main()
