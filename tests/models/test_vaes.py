"""The two benchmark VAEs and their loss terms."""

from __future__ import annotations

import math

import pytest
import torch
from torch import distributions as D
from torch import nn

from dpvae.models.conv_vae import ConvVAE
from dpvae.models.losses import (
    MixturePrior,
    gaussian_kl,
    laplace_nll,
    mixture_kl,
    mmd_dim,
    sample_sparse_prior,
    sparse_prior_log_prob,
)
from dpvae.models.mlp_vae import MLPVAE
from dpvae.privacy.dpsgd import Units, random_groups

# -- MLP VAE (P3GM) --------------------------------------------------------------------------------


def test_mlp_vae_layout_and_per_example_loss() -> None:
    model = MLPVAE(784, 30)
    assert [(n, tuple(p.shape)) for n, p in model.named_parameters() if n.endswith("weight")] == [
        ("fc1.weight", (1000, 784)),
        ("fc2.weight", (30, 1000)),
        ("fc22.weight", (30, 1000)),
        ("fc3.weight", (1000, 30)),
        ("fc4.weight", (784, 1000)),
    ]
    x = torch.rand(5, 784)
    assert model.loss(x).shape == (5,)


def test_mlp_vae_loss_is_squared_error_plus_gaussian_kl() -> None:
    torch.manual_seed(0)
    model = MLPVAE(6, 2, 8)
    x, noise = torch.rand(4, 6), torch.randn(4, 2)
    mu, logvar = model.encode(x)
    recon = model.decode(mu + noise * (0.5 * logvar).exp())
    kl = D.kl_divergence(D.Normal(mu, (0.5 * logvar).exp()), D.Normal(0.0, 1.0)).sum(1)
    torch.testing.assert_close(model.loss(x, noise), (recon - x).square().sum(1) + kl)


def test_p3gm_encoder_mean_is_a_frozen_pca_projection() -> None:
    torch.manual_seed(1)
    components, mean = torch.randn(6, 2), torch.rand(6)
    model = MLPVAE(6, 2, 8, pca_components=components, pca_mean=mean)
    x = torch.rand(3, 6)
    torch.testing.assert_close(model.encode(x)[0], (x - mean) @ components)
    assert not hasattr(model, "fc2")
    assert not any(p.requires_grad for p in model.pca.parameters())
    model.loss(x).sum().backward()
    assert model.pca.weight.grad is None and model.fc22.weight.grad is not None


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(data_dim=0, latent_dim=2), "data_dim"),
        (dict(data_dim=4, latent_dim=2, pca_components=torch.zeros(3, 2)), "pca_components"),
        (dict(data_dim=4, latent_dim=2, pca_mean=torch.zeros(4)), "pca_mean"),
    ],
)
def test_mlp_vae_rejects_bad_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MLPVAE(**kwargs)


def test_mixture_kl_is_hershey_olsen_and_exact_for_one_standard_normal() -> None:
    torch.manual_seed(2)
    mu, logvar = torch.randn(5, 3), torch.randn(5, 3)
    one = MixturePrior(torch.ones(1), torch.zeros(1, 3), torch.ones(1, 3))
    torch.testing.assert_close(mixture_kl(mu, logvar, one), mixture_kl(mu, logvar))
    prior = MixturePrior(torch.tensor([0.3, 0.7]), torch.randn(2, 3), torch.rand(2, 3) + 0.5)
    per_component = torch.stack([gaussian_kl(mu, logvar, prior.means[k], prior.variances[k]) for k in range(2)], 1)
    expected = -torch.log((prior.weights * torch.exp(-per_component)).sum(1))
    torch.testing.assert_close(mixture_kl(mu, logvar, prior), expected)
    q, p = D.Normal(mu, (0.5 * logvar).exp()), D.Normal(prior.means[0], prior.variances[0].sqrt())
    torch.testing.assert_close(per_component[:, 0], D.kl_divergence(q, p).sum(1))


# -- conv VAE (PriVAE / Mathieu) -------------------------------------------------------------------


def test_conv_vae_shapes_and_dcgan_init() -> None:
    torch.manual_seed(3)
    model = ConvVAE()
    x, noise = torch.rand(3, 1, 32, 32), torch.randn(3, 2, 50)
    mu, std, z, loc = model(x, noise)
    assert mu.shape == std.shape == (3, 50) and z.shape == (3, 2, 50) and loc.shape == (3, 2, 1, 32, 32)
    assert bool((std > 0).all())
    convs = [m for m in model.modules() if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d))]
    assert len(convs) == 9 and sum(m.bias is not None for m in convs) == 2  # only the two heads have biases
    assert float(model.decoder[3].weight.detach().std()) == pytest.approx(0.02, rel=0.05)


@pytest.mark.parametrize("norm,kind", [("group", nn.GroupNorm), ("batch", nn.BatchNorm2d), ("none", None)])
def test_conv_vae_normalisation_choice(norm: str, kind: type | None) -> None:
    model = ConvVAE(latent_dim=4, base_channels=4, norm=norm)
    norms = [m for m in model.modules() if isinstance(m, (nn.GroupNorm, nn.BatchNorm2d))]
    assert len(norms) == (0 if kind is None else 5) and all(isinstance(m, kind) for m in norms)


def test_conv_vae_sample_term_is_per_example_with_group_norm_but_not_batch_norm() -> None:
    """φ(x_i) must not depend on other examples (docs/papers.md A-P1); BatchNorm breaks that."""
    torch.manual_seed(4)
    x, noise = torch.rand(4, 1, 32, 32), torch.randn(4, 1, 4)
    moved = x.clone()
    moved[3] = torch.rand(1, 32, 32)
    group = ConvVAE(latent_dim=4, base_channels=4, norm="group")
    phi, phi_moved = group.loss_terms(x, noise)[0], group.loss_terms(moved, noise)[0]
    torch.testing.assert_close(phi[:3], phi_moved[:3])
    batch = ConvVAE(latent_dim=4, base_channels=4, norm="batch")
    assert not torch.allclose(batch.loss_terms(x, noise)[0][:3], batch.loss_terms(moved, noise)[0][:3])


def test_conv_vae_sample_term_matches_its_definition() -> None:
    torch.manual_seed(5)
    model = ConvVAE(latent_dim=4, base_channels=4, spike_weight=0.8)
    x, noise = torch.rand(2, 1, 32, 32), torch.randn(2, 3, 4)
    phi, psi = model.loss_terms(x, noise, beta=0.5)
    mu, std, z, loc = model(x, noise)
    log_lik = D.Laplace(loc, 0.1).log_prob(x[:, None]).flatten(2).sum(2)
    kld = D.Normal(mu[:, None], std[:, None]).log_prob(z).sum(2) - sparse_prior_log_prob(z, 0.8).sum(2)
    torch.testing.assert_close(phi, (-log_lik + 0.5 * kld).mean(1))
    assert torch.equal(psi, torch.zeros(1))


def test_conv_vae_batch_term_is_alpha_times_subgroup_mmd() -> None:
    torch.manual_seed(6)
    model = ConvVAE(latent_dim=4, base_channels=4)
    x, noise, prior = torch.rand(6, 1, 32, 32), torch.randn(6, 1, 4), torch.randn(6, 4)
    groups = random_groups(6, 2, torch.Generator().manual_seed(0))
    _, psi = model.loss_terms(x, noise, prior, groups, 2, alpha=100.0)
    z = model(x, noise)[2][:, 0]
    torch.testing.assert_close(psi, 100.0 * mmd_dim(z, prior, Units(groups, 2)))
    with pytest.raises(ValueError, match="prior_samples and groups"):
        model.loss_terms(x, noise, alpha=1.0)


def test_conv_vae_rejects_unknown_norm() -> None:
    with pytest.raises(ValueError, match="norm"):
        ConvVAE(norm="layer")  # type: ignore[arg-type]


# -- loss terms ------------------------------------------------------------------------------------


def test_laplace_nll_matches_torch_distribution() -> None:
    x, loc = torch.rand(3, 1, 4, 4), torch.randn(3, 1, 4, 4)
    expected = -D.Laplace(loc, 0.1).log_prob(x).flatten(1).sum(1)
    torch.testing.assert_close(laplace_nll(x, loc, 0.1), expected)


@pytest.mark.parametrize("gamma", [0.0, 0.8])
def test_sparse_prior_density_and_samples(gamma: float) -> None:
    z = torch.linspace(-3, 3, 41)
    mixture = D.MixtureSameFamily(
        D.Categorical(torch.tensor([gamma, 1 - gamma])), D.Normal(torch.zeros(2), torch.tensor([0.05, 1.0]))
    )
    torch.testing.assert_close(sparse_prior_log_prob(z, gamma), mixture.log_prob(z))
    draws = sample_sparse_prior((200_000,), gamma, generator=torch.Generator().manual_seed(1))
    assert float(draws.var()) == pytest.approx(gamma * 0.05**2 + (1 - gamma), rel=0.02)
    assert float((draws.abs() < 0.15).double().mean()) > gamma  # the spike holds at least γ of the mass


def reference_mmd(q: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """Mathieu et al.'s imq_dim_kernel, written out for one group (returns MMD_DIM, not B·MMD_DIM)."""
    n = len(q)
    off = 1 - torch.eye(n)[..., None]
    total = 0
    for scale in (0.1, 0.2, 0.5, 1.0, 2.0, 5.0):
        c = 2 * scale
        within = (c / (c + (q[:, None] - q[None]) ** 2) + c / (c + (p[:, None] - p[None]) ** 2)) * off
        across = c / (c + (p[:, None] - q[None]) ** 2)
        total = total + within.sum() / (n * (n - 1)) - 2 * across.sum() / n**2
    return total


def test_mmd_dim_per_group_matches_reference_and_gradcheck() -> None:
    torch.manual_seed(7)
    q = torch.randn(13, 3, dtype=torch.double, requires_grad=True)
    p = torch.randn(13, 3, dtype=torch.double)
    groups = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 3])  # group 3 has a single member
    got = mmd_dim(q, p, Units(groups, 4))
    expected = torch.stack([reference_mmd(q[groups == j], p[groups == j]) for j in range(3)])
    torch.testing.assert_close(got[:3], expected)
    assert float(got[3].detach()) == 0.0
    grads = torch.autograd.grad(got.sum(), q)[0]
    torch.testing.assert_close(grads, torch.autograd.grad(expected.sum(), q)[0])
    assert torch.autograd.gradcheck(lambda q: mmd_dim(q, p, Units(groups, 4)), (q,))


def test_mmd_dim_separates_distributions() -> None:
    g = torch.Generator().manual_seed(8)
    prior = torch.randn(200, 2, generator=g)
    same = mmd_dim(torch.randn(200, 2, generator=g), prior, Units.whole_batch(200))
    shifted = mmd_dim(torch.randn(200, 2, generator=g) + 2.0, prior, Units.whole_batch(200))
    assert abs(float(same)) < 0.05 < float(shifted)
    with pytest.raises(ValueError, match="posterior and prior"):
        mmd_dim(torch.zeros(3, 2), torch.zeros(3, 3), Units.whole_batch(3))


def test_units_padding_and_sums() -> None:
    units = Units(torch.tensor([2, 0, 2, 1, 2]), 4)
    members, mask = units.padded()
    assert members.shape == (4, 3)
    assert [sorted(members[u][mask[u]].tolist()) for u in range(4)] == [[1], [3], [0, 2, 4], []]
    torch.testing.assert_close(units.sum_by_unit(torch.arange(5.0)), torch.tensor([1.0, 3.0, 6.0, 0.0]))
    assert Units.per_example(3).is_per_example and not units.is_per_example
    with pytest.raises(ValueError, match="index values"):
        Units(torch.tensor([0, 5]), 2)
    assert math.isclose(float(Units.whole_batch(4).sum_by_unit(torch.ones(4))[0]), 4.0)
