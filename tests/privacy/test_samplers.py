"""The noise of directly released statistics (`dpvae.samplers`): a replication run's draws are the floating-point ones
it always made; a release's come from exact discrete samplers (their draws fit the exact probabilities, which rounded
floating-point draws fail) on integer statistics, rounded to a grid whose sensitivity includes the rounding (checked
on adversarial neighbours, and against OpenDP's own privacy map, each also on a planted bug that leaves the rounding
out); the ledger names the sampler only in a release."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chisquare

from dpvae import samplers
from dpvae.data import domain
from dpvae.methods.marginals.accounting import privbayes_ledger
from dpvae.methods.marginals.privbayes import noisy_counts
from dpvae.methods.p3gm.accounting import clustering_mechanisms
from dpvae.privacy.ledger import Ledger
from dpvae.privacy.mechanisms import dp_kmeans
from dpvae.privacy.mechanisms.kmeans import kmeans_records

SHAPES = [(7,), (3, 5), (1,)]


@pytest.mark.parametrize("shape", SHAPES)
def test_seeded_draws_are_the_floating_point_ones(shape: tuple[int, ...]) -> None:
    values = np.random.default_rng(1).normal(size=shape) * 40
    noisy = samplers.gaussian(values, 1.7, 2.5, secret=False, rng=np.random.default_rng(5))
    assert noisy.tobytes() == (values + np.random.default_rng(5).normal(0.0, 1.0, size=shape) * (1.7 * 2.5)).tobytes()
    laplace = samplers.laplace_noise(shape, 0.3, secret=False, rng=np.random.default_rng(5))
    assert laplace.tobytes() == np.random.default_rng(5).laplace(0.0, 0.3, size=shape).tobytes()


def test_a_release_adds_integers_on_the_grid_drawn_from_its_own_stream() -> None:
    """γ·(q + Y) on the grid; the stream's state repeats the draws (a `--seed-file` release repeats), another
    stream's differ."""
    values = np.random.default_rng(2).normal(size=(4, 50)) * 3
    first = samplers.gaussian(values, 2.0, 1.0, secret=True, rng=np.random.default_rng(0))
    again = samplers.gaussian(values, 2.0, 1.0, secret=True, rng=np.random.default_rng(0))
    other = samplers.gaussian(values, 2.0, 1.0, secret=True, rng=np.random.default_rng(1))
    grid = samplers.gaussian_sampler(2.0, 1.0, values.size).grid
    assert np.array_equal(first / grid, np.rint(first / grid))  # every low-order bit is the grid's
    assert np.array_equal(first, again) and not np.array_equal(first, other)
    seeded = samplers.gaussian(values, 2.0, 1.0, secret=False, rng=np.random.default_rng(0))
    assert not np.array_equal(seeded / grid, np.rint(seeded / grid))  # the float draws are not on it
    counts = np.arange(30.0)
    noisy = samplers.laplace(counts, 2.0, 1.0, secret=True, rng=np.random.default_rng(0))
    assert np.array_equal(noisy, np.rint(noisy)) and not np.array_equal(noisy, counts)
    with pytest.raises(ValueError, match="not integer-valued"):
        samplers.laplace(counts + 0.5, 2.0, 1.0, secret=True, rng=np.random.default_rng(0))


def test_the_far_tail_is_drawn_in_python_integers() -> None:
    """Bernoulli(exp(−γ)) for γ beyond int64 (the discrete Gaussian's far tail): exp(−γ) of the draws."""
    rng = np.random.default_rng(0)
    for numerator, denominator in ((1, 2), (3 * 2**70, 2**71), (2**80, 2**80)):
        share = np.mean([samplers._bernoulli_exp_big(numerator, denominator, rng) for _ in range(4000)])
        assert abs(share - math.exp(-numerator / denominator)) < 0.03


def _laplace_pmf(scale: float) -> Callable[[np.ndarray], np.ndarray]:
    p = math.exp(-1 / (math.ceil(scale * 2**20) / 2**20))  # the scale as drawn: rounded up to a multiple of 2^-20
    return lambda z: (1 - p) / (1 + p) * p ** np.abs(z)


def _gaussian_pmf(sigma: float) -> Callable[[np.ndarray], np.ndarray]:
    t, c, lift = samplers._gaussian_parameters(sigma)
    variance = c * t / lift  # σ'² ≥ σ²
    assert sigma**2 <= variance <= sigma**2 * (1 + 1e-4) + 1e-6 * t
    support = np.arange(-int(60 * sigma) - 60, int(60 * sigma) + 61)
    total = np.exp(-(support**2) / (2 * variance)).sum()
    return lambda z: np.exp(-(z**2) / (2 * variance)) / total


def _fits(draws: np.ndarray, pmf: Callable[[np.ndarray], np.ndarray]) -> bool:
    """A chi-square test of the draws against the exact pmf (cells with >= 20 expected draws, the tails pooled) at
    the 1e-5 level."""
    values = np.arange(draws.min() - 1, draws.max() + 2)
    expected = pmf(values) * draws.size
    inner = expected >= 20
    observed = np.array([np.sum(draws == v) for v in values[inner]] + [np.sum(~np.isin(draws, values[inner]))])
    wanted = np.append(expected[inner], draws.size - expected[inner].sum())
    return chisquare(observed, wanted * observed.sum() / wanted.sum()).pvalue > 1e-5


@pytest.mark.parametrize("scale", [0.45, 0.7, 3.0])
def test_the_discrete_laplace_is_exact(scale: float) -> None:
    draws = samplers.laplace_noise((100_000,), scale, secret=True, rng=np.random.default_rng(0)).astype(np.int64)
    assert _fits(draws, _laplace_pmf(scale))
    planted = np.rint(np.random.default_rng(0).laplace(0.0, scale, 100_000)).astype(np.int64)  # rounded floats
    assert not _fits(planted, _laplace_pmf(scale))


@pytest.mark.parametrize("sigma", [0.9, 4.2, 9.97])
def test_the_discrete_gaussian_is_exact(sigma: float) -> None:
    draws = samplers.gaussian_noise((100_000,), sigma, secret=True, rng=np.random.default_rng(0)).astype(np.int64)
    assert _fits(draws, _gaussian_pmf(sigma))
    planted = np.rint(np.random.default_rng(0).normal(0.0, sigma * 1.02, 100_000)).astype(np.int64)
    assert not _fits(planted, _gaussian_pmf(sigma))


def test_large_scales_keep_their_spread() -> None:
    """On a grid σ is large (10^5-10^7): the draws' standard deviation is σ (a cheap check; the exactness of the
    algorithm does not depend on σ's size, only its int64 range, which `_gaussian_parameters` guards)."""
    for sigma in (229_196.97, 2.6e6, samplers.MAX_SCALE):
        draws = samplers.gaussian_noise((40_000,), sigma, secret=True, rng=np.random.default_rng(0))
        assert abs(draws.std() / sigma - 1) < 0.03 and abs(draws.mean()) < 0.05 * sigma
    with pytest.raises(ValueError, match="below about"):
        samplers.gaussian_noise((1,), 2.0**40, secret=True, rng=np.random.default_rng(0))


def _worst_excess(integer_sensitivity, trials: int = 300) -> float:
    """The largest ‖round(v/γ) − round(v'/γ)‖ / (the bound) over neighbours ‖v − v'‖ ≤ Δ placed at the rounding's
    worst: v just below a half-step in every coordinate, v' moved by Δ along a random or the all-ones direction."""
    rng, worst = np.random.default_rng(0), 0.0
    for trial in range(trials):
        entries, sensitivity = int(rng.integers(1, 400)), float(rng.choice([0.01, 1.0, math.sqrt(2), 37.0]))
        grid = samplers.gaussian_sampler(1.0, sensitivity, entries).grid
        direction = np.ones(entries) if trial % 2 else np.abs(rng.normal(size=entries))
        move = sensitivity * direction / np.linalg.norm(direction)
        base = grid * (rng.integers(-1000, 1000, entries) + 0.5 - 1e-6 * rng.random(entries))
        for v, w in ((base, base + move), (base + move, base)):
            moved = np.linalg.norm(samplers.on_grid(v, grid) - samplers.on_grid(w, grid))
            worst = max(worst, moved / integer_sensitivity(sensitivity, entries, grid))
    return worst


def test_rounding_to_the_grid_stays_within_the_integer_sensitivity() -> None:
    assert _worst_excess(lambda s, m, g: samplers.gaussian_sampler(1.0, s, m).sensitivity) <= 1.0
    assert _worst_excess(lambda s, m, g: s / g) > 1.0  # planted: the rounding left out of the bound


@pytest.mark.parametrize("entries", [1, 10, 10_000])
@pytest.mark.parametrize("under", [1.0, math.sqrt(2), 2.0])
def test_the_raised_noise_keeps_the_ledgers_multiplier_by_opendps_own_map(entries: int, under: float) -> None:
    """OpenDP's float Gaussian with the same grid and noise (it rounds, and its map charges the rounding) spends no
    more zCDP at the record's sensitivity than the ledger's multiplier σΔ/under does; the noise left unraised would."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    sigma, sensitivity = 1.3, 1.0
    sampler = samplers.gaussian_sampler(sigma, sensitivity, entries, under=under * sensitivity)
    ledger_rho = 1 / (2 * (sigma * sensitivity / (under * sensitivity)) ** 2)
    assert sampler.scale / sampler.sensitivity >= sigma * sensitivity / (under * sensitivity)

    def rho(scale_on_grid: float) -> float:
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=entries), dp.l2_distance(T=float)
        k = round(math.log2(sampler.grid))
        return dp.m.make_gaussian(*space, scale=scale_on_grid * sampler.grid, k=k).map(under * sensitivity)

    assert rho(sampler.scale) <= ledger_rho * (1 + 1e-12)
    assert rho(sigma * sensitivity / sampler.grid) > ledger_rho  # planted: σΔ/γ, the rounding not paid for


def test_a_seeded_ledger_is_as_before_and_a_release_names_its_samplers() -> None:
    seeded, _ = privbayes_ledger(6, 2, 1.0, 1e-5)
    assert "sampler" not in str(seeded.to_dict())
    released, _ = privbayes_ledger(6, 2, 1.0, 1e-5, secret=True)
    assert released.epsilon == seeded.epsilon and released.sound.epsilon == seeded.sound.epsilon
    paper, strict = released.paper.mechanisms[-1], released.sound.mechanisms[-1]
    assert (paper.sampler.kind, paper.sampler.sensitivity, strict.sampler.sensitivity) == ("discrete Laplace", 1, 2)
    assert paper.sampler.scale == paper.noise_multiplier * paper.sensitivity
    assert Ledger.from_dict(released.to_dict()) == released


def test_dp_gm_records_its_samplers_as_its_k_means_draws_them() -> None:
    x = np.random.default_rng(0).normal(size=(60, 3))
    fit = dp_kmeans(x, 3, 2, 16, 1.0, 4.0, 4.0, np.random.default_rng(0), secret=True)
    assert np.array_equal(fit.counts, np.rint(fit.counts))
    assert fit.mechanisms == kmeans_records(3, 2, 16, 4.0, 4.0, secret=True)
    assert clustering_mechanisms(4.0, 2, shape=(3, 16)) == fit.mechanisms  # the ledger's (add/remove) records
    strict = clustering_mechanisms(4.0, 2, replace_one=True, shape=(3, 16))
    for record, added in zip(strict, fit.mechanisms):
        assert record.sampler.scale == added.sampler.scale  # the same noise, stated at the replace-one sensitivity
        assert record.sampler.scale / record.sampler.sensitivity >= record.noise_multiplier


def test_a_releases_privbayes_counts_and_domain_histograms_are_integers() -> None:
    codes = np.random.default_rng(0).integers(0, 3, size=(200, 2))
    counts = noisy_counts(codes, (0, 1), np.array([3, 3]), 2.0, np.random.default_rng(0), secret=True)
    assert np.array_equal(counts, np.rint(counts))
    seeded = noisy_counts(codes, (0, 1), np.array([3, 3]), 2.0, np.random.default_rng(0))
    exact = np.bincount(codes[:, 0] * 3 + codes[:, 1], minlength=9).astype(np.float64)
    assert np.array_equal(seeded.ravel(), np.clip(exact + np.random.default_rng(0).laplace(0.0, 2.0, 9), 0, None))
    entry = {"domain": "estimate", "domain_epsilon": 1.0, "positive": "y"}
    train = pd.DataFrame({"a": np.random.default_rng(0).uniform(0, 500, 300), "label": ["y", "n"] * 150})
    for secret in (False, True):
        fitted = domain.fit_table(entry, train, "label", ["a"], np.random.default_rng(0), secret)
        assert fitted.estimate.discrete == secret and ("discrete" in fitted.to_dict()["estimate"]) == secret
        assert domain.Domain.from_dict(fitted.to_dict()) == fitted
