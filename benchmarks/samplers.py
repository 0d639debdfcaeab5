"""Seconds a release's exact discrete samplers (`dpvae.samplers`) add over the seeded floating-point draws,
at the papers' sizes, against the recorded wall time of a paper-scale run of the method (issue 62 Build 5: at most 5 %).

    python benchmarks/samplers.py [--device cpu|cuda] [--repeats 3] [--cases privbayes-adult domain-estimate ...]
                                  [--quick] [--clock wall|cpu]

Prints the device (`# device=cpu name=... cores=2`), then one line per case:
`case=dp-merf-mnist draws=100000 float_s=0.0012 exact_s=0.3 added_s=0.3 run_s=149.3 added_pct=0.2`; `--clock cpu`
times this process's CPU seconds (a loaded machine's wall clock counts the other processes too).
`draws`: noise draws of one run; `float_s` / `exact_s`: median seconds of the statistic's release (the same code,
`secret` off and on); `run_s`: the fastest recorded paper-scale training of the method on that dataset on the same
kind of device (`reproductions/<paper>.csv` `wall_s`; none recorded: `nan`); `added_pct` = 100·added_s / run_s;
`run_median_s`, `added_pct_median`: the same against the median recorded run.
The samplers run on the host whatever `--device` (DP-MERF's sum is rounded on the host). First, per kind, the
microseconds a draw of `dpvae.samplers` and of OpenDP 0.14.1's samplers (`make_laplace` / `make_gaussian` on i64)
take: `sampler=dpvae kind=gaussian scale=229197 us_per_draw=0.9`.

Cases (the sizes of the papers' runs):
* `privbayes-adult`: PrivBayes' d − k noisy (k+1)-way count tables on Adult (43,957 records; 6 numeric columns in
  20 bins, the 8 categorical ones with UCI's categories and '?', the label; k = 2; a random network);
* `domain-estimate`: the domain estimate's Laplace histograms of Adult's 6 numeric columns (160 bins each);
* `dp-gm-mnist`: DP kernel k-means' counts and feature sums (k = 10 clusters, 1,000 random features, 5 iterations)
  on 60,000 MNIST-sized records (784 + 10): the whole `dp_kmeans`, seeded and secret;
* `dp-merf-mnist`: DP-MERF's one release of the 10,000 × 10 mean embedding;
* `p3gm-mnist`: P3GM's DP mean (794 values), DP-PCA's upper triangle of XᵀX (794 · 795 / 2 = 315,615 values) and
  DP-EM's statistics (3 components, 10 PCA features, 20 + 1 M-steps) on 63,000 records: `dp_pca` + `dp_em`.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dpvae.devices import device_argument, device_name

ROOT = Path(__file__).resolve().parents[1]
#: Adult's categorical columns (UCI's categories, with '?' where the data has it) and its numeric ones
ADULT_CATEGORIES, ADULT_NUMERIC, ADULT_N = (9, 16, 7, 15, 6, 5, 2, 42), 6, 43957
CASES = ("privbayes-adult", "domain-estimate", "dp-gm-mnist", "dp-merf-mnist", "p3gm-mnist")
#: (paper, method, dataset) whose recorded paper-scale runs a case is compared with
RUNS = {
    "privbayes-adult": ("p3gm", "privbayes", "adult"),
    "domain-estimate": ("p3gm", "privbayes", "adult"),
    "dp-gm-mnist": ("p3gm", "dp-gm", "mnist"),
    "dp-merf-mnist": ("dp2vae", "dp-merf", "mnist"),
    "p3gm-mnist": ("p3gm", "p3gm", "mnist"),
}


def recorded_run_seconds(case: str, device: str) -> tuple[float, float]:
    """The fastest and the median recorded paper-scale training of the case's method and dataset on this kind of
    device."""
    paper, method, dataset = RUNS[case]
    with open(ROOT / "reproductions" / f"{paper}.csv") as stream:
        walls = [
            float(row["wall_s"])
            for row in csv.DictReader(stream)
            if (row["method"], row["dataset"], row["scale"]) == (method, dataset, "paper")
            and row["device"].startswith(device)
            and row["wall_s"]
        ]
    return (min(walls), statistics.median(walls)) if walls else (math.nan, math.nan)


def privbayes_adult(quick: bool) -> tuple[int, Callable[[bool], object]]:
    from dpvae.methods.marginals.privbayes import noisy_conditionals

    rng = np.random.default_rng(0)
    sizes = np.array([20] * ADULT_NUMERIC + list(ADULT_CATEGORIES) + [2])
    n = 2000 if quick else ADULT_N
    codes = np.column_stack([rng.integers(0, s, n) for s in sizes])
    order = [int(a) for a in rng.permutation(len(sizes))]
    network = [(child, tuple(int(p) for p in rng.choice(order[:i], min(i, 2), replace=False))) for i, child in
               enumerate(order[1:], start=1)]  # fmt: skip
    k = 2
    draws = int(np.prod(sizes[[order[0], *order[1:k + 1]]])) + sum(
        int(np.prod(sizes[[*parents, child]])) for child, parents in network[k:]
    )  # fmt: skip

    def release(secret: bool) -> object:
        return noisy_conditionals(codes, sizes, order[0], network, 0.5, np.random.default_rng(1), secret)

    return draws, release


def domain_estimate(quick: bool) -> tuple[int, Callable[[bool], object]]:
    from dpvae.data import domain

    values = np.random.default_rng(0).uniform(0, 1e5, (2000 if quick else ADULT_N, ADULT_NUMERIC))
    bins = len(domain.grid()) - 1

    def release(secret: bool) -> object:
        estimate = domain.Estimate(0.1, tuple(map(str, range(ADULT_NUMERIC))), 0.0, discrete=secret)
        return [domain.estimate_bounds(values[:, j], estimate, np.random.default_rng(1), str(j)) for j in range(6)]

    return ADULT_NUMERIC * bins, release


def dp_gm_mnist(quick: bool) -> tuple[int, Callable[[bool], object]]:
    from dpvae.privacy.mechanisms import dp_kmeans

    k, features, iterations = 10, 1000, 5
    x = np.random.default_rng(0).random((2000 if quick else 60000, 794))

    def release(secret: bool) -> object:
        return dp_kmeans(x, k, iterations, features, 28.0, 4.0, 4.0, np.random.default_rng(1), secret)

    return (iterations + 1) * k + iterations * k * features, release


def dp_merf_mnist(quick: bool) -> tuple[int, Callable[[bool], object]]:
    import torch

    from dpvae.methods.dp_merf.train import _exact_release

    total = torch.rand(10000, 10) * 6000
    generator = torch.Generator().manual_seed(1)

    def release(secret: bool) -> object:
        if secret:
            return _exact_release(total, 5.0, 60000, np.random.default_rng(2))
        return total / 60000 + 2 * 5.0 / 60000 * torch.randn(total.shape, generator=generator)

    return total.numel(), release


def p3gm_mnist(quick: bool) -> tuple[int, Callable[[bool], object]]:
    from dpvae.privacy.mechanisms import dp_em_diagonal_gmm, dp_pca

    d, kept, components, iterations = 794, 10, 3, 20
    x = np.random.default_rng(0).random((2000 if quick else 63000, d))

    def release(secret: bool) -> object:
        rng = np.random.default_rng(1)
        pca = dp_pca(x, kept, 5.0, rng, mean="dp", mean_noise_multiplier=20.0, mean_clip=math.sqrt(d), secret=secret)
        return dp_em_diagonal_gmm(
            pca.transform(x), components, iterations, 50.0, rng, account_initial_step=True, secret=secret
        )

    m_steps = iterations + 1
    return d + d * (d + 1) // 2 + m_steps * (components + 2 * components * kept), release


BUILDERS = {
    "privbayes-adult": privbayes_adult,
    "domain-estimate": domain_estimate,
    "dp-gm-mnist": dp_gm_mnist,
    "dp-merf-mnist": dp_merf_mnist,
    "p3gm-mnist": p3gm_mnist,
}


def draw_rates(draws: int) -> None:
    """µs per draw of this module's exact samplers and of OpenDP's, at a count's and a grid's scale."""
    import opendp.prelude as dp

    from dpvae import samplers

    dp.enable_features("contrib")
    for kind, scale in (("laplace", 0.4444), ("gaussian", 9.97), ("gaussian", 229_196.97)):
        metric = (dp.l1_distance if kind == "laplace" else dp.l2_distance)(T="i64")
        make = dp.m.make_laplace if kind == "laplace" else dp.m.make_gaussian
        opendp = make(dp.vector_domain(dp.atom_domain(T="i64")), metric, scale=scale)
        for name, draw in (
            ("dpvae", lambda: samplers._exact(kind, draws, scale, np.random.default_rng(0))),
            ("opendp", lambda: opendp([0] * draws)),
        ):
            seconds = median_seconds(draw, 3)
            print(f"sampler={name} kind={kind} scale={scale:g} us_per_draw={1e6 * seconds / draws:.2f}", flush=True)


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
CLOCK = CLOCKS["wall"]


def median_seconds(call: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = CLOCK()
        call()
        times.append(CLOCK() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    device_argument(parser)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--quick", action="store_true", help="small record counts (the draws stay paper-sized)")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="wall", help="cpu: this process's CPU seconds")
    args = parser.parse_args()
    global CLOCK
    CLOCK = CLOCKS[args.clock]
    kind = "cuda" if str(args.device).startswith("cuda") else "cpu"
    load = os.getloadavg()[0]
    print(f"# device={kind} name={device_name(args.device)} cores={len(os.sched_getaffinity(0))} clock={args.clock} "
          f"load={load:.1f}", flush=True)  # fmt: skip
    draw_rates(2000 if args.quick else 20000)
    for case in args.cases:
        draws, release = BUILDERS[case](args.quick)
        release(True)  # warm
        plain = median_seconds(lambda: release(False), args.repeats)
        exact = median_seconds(lambda: release(True), args.repeats)
        fastest, median = recorded_run_seconds(case, kind)
        added = exact - plain
        print(
            f"case={case} draws={draws} float_s={plain:.4f} exact_s={exact:.4f} added_s={added:.4f} "
            f"run_s={fastest:.1f} added_pct={100 * added / fastest:.2f} "
            f"run_median_s={median:.1f} added_pct_median={100 * added / median:.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
