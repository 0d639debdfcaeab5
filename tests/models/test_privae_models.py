"""PriVAE's model pieces: the pinwheel VAE and its mixture prior, KL(p(z)||q(z)) (KLD_INC), the shared
LatentVAE loss terms and importance weights, saving and loading."""

from __future__ import annotations

import math

import pytest
import torch

from dpvae.models.conv_vae import ConvVAE
from dpvae.models.losses import gaussian_mixture_log_prob, kld_inc, normal_log_prob, sample_gaussian_mixture
from dpvae.models.pinwheel_vae import MOG_MEANS, PinwheelVAE
from dpvae.models.vae_files import load_vae, save_vae
from dpvae.privacy.dpsgd import Units


def test_mixture_log_prob_matches_torch_distributions_and_samples_follow_it() -> None:
    means = torch.tensor(MOG_MEANS)
    mixture = torch.distributions.MixtureSameFamily(
        torch.distributions.Categorical(torch.ones(4)),
        torch.distributions.Independent(torch.distributions.Normal(means, math.sqrt(0.03)), 1),
    )
    z = torch.randn(50, 2)
    torch.testing.assert_close(gaussian_mixture_log_prob(z, means, math.sqrt(0.03)), mixture.log_prob(z))
    draws = sample_gaussian_mixture(20000, means, math.sqrt(0.03), torch.Generator().manual_seed(0))
    nearest = torch.cdist(draws, means).argmin(1)
    assert torch.bincount(nearest, minlength=4).min() > 4500  # equal weights
    assert (draws - means[nearest]).std().item() == pytest.approx(math.sqrt(0.03), rel=0.05)


def _kld_inc_reference(mu, std, prior, members, prior_log_prob) -> torch.Tensor:
    """Mathieu et al.'s kld_inc on one group's rows (their loop over B prior draws against B posteriors)."""
    mu, std, z = mu[members], std[members], prior[members]
    log_q = torch.stack([normal_log_prob(z[a], mu, std).sum(-1) for a in range(len(members))])  # [draws, members]
    log_agg = torch.logsumexp(log_q, 1) - math.log(len(members))
    return (prior_log_prob(z) - log_agg).mean()


def test_kld_inc_per_unit_equals_mathieus_estimator_on_each_subgroup() -> None:
    torch.manual_seed(0)
    model = PinwheelVAE()
    mu, std, prior = torch.randn(9, 2), torch.rand(9, 2) + 0.1, model.sample_prior(9)
    groups = torch.tensor([0, 2, 0, 2, 2, 0, 1, 2, 0])
    values = kld_inc(mu, std, prior, Units(groups, 4), model.prior_log_prob)
    for unit in range(3):
        members = (groups == unit).nonzero().squeeze(1)
        torch.testing.assert_close(values[unit], _kld_inc_reference(mu, std, prior, members, model.prior_log_prob))
    assert values[3] == 0  # an empty sub-group


def test_kld_inc_of_one_unit_depends_only_on_its_members() -> None:
    torch.manual_seed(1)
    model = PinwheelVAE()
    mu = torch.randn(6, 2, requires_grad=True)
    std, prior = torch.rand(6, 2) + 0.1, model.sample_prior(6)
    groups = torch.tensor([0, 1, 0, 1, 1, 0])
    kld_inc(mu, std, prior, Units(groups, 2), model.prior_log_prob)[0].backward()
    assert torch.all(mu.grad[groups == 1] == 0) and torch.all(mu.grad[groups == 0] != 0)
    assert torch.isfinite(mu.grad).all()


def test_pinwheel_loss_terms_match_their_definition() -> None:
    torch.manual_seed(2)
    model = PinwheelVAE()
    x, noise = torch.randn(5, 2), torch.randn(5, 3, 2)
    prior, groups = model.sample_prior(5), torch.zeros(5, dtype=torch.long)
    phi, psi = model.loss_terms(x, noise, prior, groups, 1, beta=0.5, alpha=2.0)
    mu, std = model.encode(x)
    z = mu[:, None] + std[:, None] * noise
    mean, scale = model.decode(z)
    log_px = torch.distributions.Normal(mean, scale).log_prob(x[:, None]).sum(-1)
    log_q = torch.distributions.Normal(mu[:, None], std[:, None]).log_prob(z).sum(-1)
    torch.testing.assert_close(phi, (-log_px + 0.5 * (log_q - model.prior_log_prob(z))).mean(1))
    torch.testing.assert_close(psi, 2.0 * kld_inc(mu, std, prior, Units(groups, 1), model.prior_log_prob))
    assert model.loss_terms(x, noise, beta=0.5)[1].tolist() == [0.0]  # alpha = 0: no batch-wise term


def test_iwae_on_the_pinwheel_vae_converges_to_the_exact_marginal_likelihood() -> None:
    """log p(x) by quadrature over the 2-d latent grid vs the importance-weighted estimate (K = 20000)."""
    torch.manual_seed(3)
    model = PinwheelVAE().double()
    x = torch.tensor([[0.5, -0.3], [-1.0, 0.8]], dtype=torch.float64)
    grid = torch.linspace(-3, 3, 601, dtype=torch.float64)
    z = torch.cartesian_prod(grid, grid)
    cell = math.log((grid[1] - grid[0]).item() ** 2)
    with torch.no_grad():
        exact = torch.stack(
            [
                torch.logsumexp(model.prior_log_prob(z) + model.log_likelihood(xi.expand(len(z), 2), z), 0) + cell
                for xi in x
            ]
        )
        estimate = torch.logsumexp(model.log_weights(x, torch.randn(2, 20000, 2, dtype=torch.float64)), 1) - math.log(
            20000
        )
    torch.testing.assert_close(estimate, exact, atol=0.05, rtol=0)


def test_conv_vae_prior_is_the_sparse_prior_with_its_spike_std() -> None:
    model = ConvVAE(latent_dim=3, base_channels=4, norm_groups=2, spike_weight=0.8, spike_std=0.1)
    z = torch.randn(4, 3)
    spike = torch.distributions.Normal(0.0, 0.1).log_prob(z) + math.log(0.8)
    slab = torch.distributions.Normal(0.0, 1.0).log_prob(z) + math.log(0.2)
    torch.testing.assert_close(model.prior_log_prob(z), torch.logaddexp(spike, slab).sum(-1))
    draws = model.sample_prior(40000, torch.Generator().manual_seed(0))
    assert (draws.abs() < 0.3).float().mean().item() == pytest.approx(0.8 + 0.2 * 0.236, abs=0.01)


@pytest.mark.parametrize(
    "model",
    [PinwheelVAE(), ConvVAE(latent_dim=3, base_channels=4, norm="batch", norm_groups=2)],
    ids=["pinwheel", "conv"],
)
def test_saved_models_load_with_the_same_outputs(model, tmp_path) -> None:
    torch.manual_seed(4)
    x = torch.rand(3, 2) if isinstance(model, PinwheelVAE) else torch.rand(3, 1, 32, 32)
    model.train().loss_terms(x, torch.randn(3, 1, model.latent_dim))  # BatchNorm running statistics move
    save_vae(model, tmp_path, {"note": "test"})
    loaded, meta = load_vae(tmp_path)
    assert meta["class"] == type(model).__name__ and meta["note"] == "test"
    model.eval()
    with torch.no_grad():
        for a, b in zip(model.encode(x), loaded.encode(x)):
            torch.testing.assert_close(a, b)
