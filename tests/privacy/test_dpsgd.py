"""Vectorised DP-SGD engines: clipped sums against independent references, sensitivity, noise, sampling.

Tolerances (tests/support/tolerances.py). The engines against torch.func / brute-force autograd run in float64:
a clipped-sum entry sums at most ~1e4 products of O(1) terms (B <= 12 examples of a 32x32 conv), exact to
γ_n ≈ 1e4·u ≈ 1e-12 relative (u = 2^-53), so rtol 1e-10 (1e-12 for one layer's gradient, ~1e2 terms; 1e-9 where
micro- and term-wise aggregation add a second clipped level), atol 1e-12 for entries that cancel to near zero.
Measured on this 2-core CPU, seeds as written and shifted by one, 1 and 2 threads
(benchmarks/measured/cpu-2026-12-01/tolerances.log): at most 0.027 of the tolerance. Against opacus (float32,
its own kernels): rtol 1e-5, atol 1e-6, measured at most 0.19 of it. A planted clip 1 % larger lies > 100
tolerances away from either (`test_the_tolerances_fail_a_clip_one_percent_larger`)."""

from __future__ import annotations

import copy
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import Tensor, nn
from torch.func import functional_call, grad, vmap

from dpvae.models.conv_vae import ConvVAE
from dpvae.models.losses import mmd_dim
from dpvae.models.mlp_vae import MLPVAE
from dpvae.privacy.dpsgd import (
    DPSGD,
    BatchAggregation,
    MicroAggregation,
    OpacusDPSGD,
    TermwiseDPSGD,
    Units,
    conv_transpose2d_grad_sample,
    layers,
    poisson_sample,
    random_groups,
)
from dpvae.privacy.dpsgd import engine as engine_module
from dpvae.privacy.dpsgd.analysis import clipped_sums, measured_sensitivity
from support.tolerances import assert_planted_fails

ROOT = Path(__file__).resolve().parents[2]
COMMON = dict(noise_multiplier=1.0, sample_rate=0.01)


# -- small models and independent references -----------------------------------------------------


class ConvPhi(nn.Module):
    """Adapter so that torch.func.functional_call can evaluate the conv VAE's per-example φ."""

    def __init__(self, vae: ConvVAE) -> None:
        super().__init__()
        self.vae = vae

    def forward(self, x: Tensor, noise: Tensor) -> Tensor:
        return self.vae.loss_terms(x, noise)[0]


class RowsNet(nn.Module):
    """Linear layers applied to several rows per example ([B, L, features]): exercises the Gram form."""

    def __init__(self) -> None:
        super().__init__()
        self.first, self.second = nn.Linear(4, 6), nn.Linear(6, 3)

    def forward(self, x: Tensor) -> Tensor:
        return self.second(torch.tanh(self.first(x)))


def mlp_case(batch: int = 7) -> tuple[MLPVAE, Tensor, Tensor]:
    torch.manual_seed(0)
    model = MLPVAE(12, 3, 10).double()
    return model, torch.rand(batch, 12, dtype=torch.double), torch.randn(batch, 3, dtype=torch.double)


def conv_case(batch: int = 5, samples: int = 2) -> tuple[ConvVAE, Tensor, Tensor]:
    torch.manual_seed(0)
    model = ConvVAE(latent_dim=4, base_channels=4, norm="group", norm_groups=2).double()
    for p in model.parameters():  # larger weights than the DCGAN init, so that gradients are not tiny
        p.data.normal_(0, 0.3)
    return (model, torch.rand(batch, 1, 32, 32, dtype=torch.double), torch.randn(batch, samples, 4, dtype=torch.double))


def trainable(model: nn.Module) -> dict[str, Tensor]:
    return {k: v.detach() for k, v in model.named_parameters() if v.requires_grad}


def flat(grads: dict[str, Tensor], names: list[str]) -> Tensor:
    return torch.cat([grads[n].reshape(grads[n].shape[0], -1) for n in names], 1)


def per_example_grads(module: nn.Module, *batch: Tensor) -> Tensor:
    """[B, n_params] per-example gradients of module(*batch)[i] with torch.func.vmap(grad)."""
    params = trainable(module)

    def loss(p: dict[str, Tensor], *example: Tensor) -> Tensor:
        return functional_call(module, p, tuple(e.unsqueeze(0) for e in example)).sum()

    return flat(vmap(grad(loss), in_dims=(None,) + (0,) * len(batch))(params, *batch), list(params))


def unit_grads(model: nn.Module, unit_losses: Tensor) -> Tensor:
    """[U, n_params] gradient of every unit loss by brute force (one autograd call per unit)."""
    params = [p for p in model.parameters() if p.requires_grad]
    rows = [
        torch.cat(
            [
                torch.zeros_like(p).flatten() if g is None else g.flatten()
                for p, g in zip(params, torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True))
            ]
        )
        for loss in unit_losses
    ]
    return torch.stack(rows)


def clipped_sum(grads: Tensor, clip: float) -> Tensor:
    norms = grads.norm(dim=1)
    assert (norms > clip).any() and (norms < clip).any(), "pick a clip that clips some units but not all"
    return (grads * (clip / norms).clamp(max=1)[:, None]).sum(0)


class MLPLoss(nn.Module):
    def __init__(self, vae: MLPVAE) -> None:
        super().__init__()
        self.vae = vae

    def forward(self, x: Tensor, noise: Tensor) -> Tensor:
        return self.vae.loss(x, noise)


# -- clipped sums -------------------------------------------------------------------------------


def _mlp_phi() -> tuple[nn.Module, nn.Module, tuple[Tensor, Tensor]]:
    model, x, noise = mlp_case()
    return model, MLPLoss(model), (x, noise)


def _conv_phi() -> tuple[nn.Module, nn.Module, tuple[Tensor, Tensor]]:
    """Conv2d, ConvTranspose2d, GroupNorm; two Monte-Carlo samples per example (rows folded example-major)."""
    model, x, noise = conv_case()
    return model, ConvPhi(model), (x, noise)


@pytest.mark.parametrize("case", [_mlp_phi, _conv_phi], ids=["mlp", "conv"])
@pytest.mark.parametrize("gram_advantage", [0.0, 1e9])  # force instantiation, then the Gram form
def test_per_example_clipped_sum_matches_torch_func(
    monkeypatch: pytest.MonkeyPatch, gram_advantage: float, case
) -> None:
    monkeypatch.setattr(layers, "GRAM_ADVANTAGE", gram_advantage)
    model, phi, batch = case()
    grads = per_example_grads(phi, *batch)
    clip = float(grads.norm(dim=1).median())
    engine = DPSGD(model, max_grad_norm=clip, expected_batch_size=len(batch[0]), **COMMON)
    got = clipped_sums(engine, phi(*batch))["dpsgd"]
    torch.testing.assert_close(got, clipped_sum(grads, clip), rtol=1e-10, atol=1e-12)


class MixedNet(nn.Module):
    """Embedding, LayerNorm, a grouped convolution, a Linear called twice and a frozen bias."""

    def __init__(self) -> None:
        super().__init__()
        self.embed, self.norm = nn.Embedding(7, 6), nn.LayerNorm(6)
        self.conv = nn.Conv1d(6, 4, 3, padding=1, groups=2)
        self.shared = nn.Linear(4, 4)
        self.shared.bias.requires_grad_(False)

    def forward(self, tokens: Tensor) -> Tensor:
        h = self.conv(self.norm(self.embed(tokens)).transpose(1, 2)).transpose(1, 2)  # [B, T, 4]
        return (self.shared(torch.tanh(self.shared(h))) ** 2).sum((1, 2))


@pytest.mark.parametrize("keep_floats", [0, engine_module.KEEP_FLOATS])  # weight-gradient pass / kept grads
def test_per_example_clipped_sum_for_other_layer_types(monkeypatch: pytest.MonkeyPatch, keep_floats: int) -> None:
    monkeypatch.setattr(engine_module, "KEEP_FLOATS", keep_floats)
    torch.manual_seed(12)
    model = MixedNet().double()
    tokens = torch.randint(0, 7, (6, 5))
    grads = per_example_grads(model, tokens)
    clip = float(grads.norm(dim=1).median())
    engine = DPSGD(model, max_grad_norm=clip, expected_batch_size=6, **COMMON)
    torch.testing.assert_close(
        clipped_sums(engine, model(tokens))["dpsgd"], clipped_sum(grads, clip), rtol=1e-10, atol=1e-12
    )


@pytest.mark.parametrize("mode", ["hooks", "ghost"])
def test_clipped_sum_equals_opacus_mlp(mode: str) -> None:
    torch.manual_seed(1)
    model = MLPVAE(30, 4, 20)
    reference_model = copy.deepcopy(model)
    x, noise = torch.rand(16, 30), torch.randn(16, 4)
    ours = clipped_sums(DPSGD(model, max_grad_norm=2.0, expected_batch_size=16, **COMMON), model.loss(x, noise))
    reference = OpacusDPSGD(reference_model, max_grad_norm=2.0, noise_multiplier=1.0, expected_batch_size=16, mode=mode)
    theirs = clipped_sums(reference, reference_model.loss(x, noise))
    reference.close()
    torch.testing.assert_close(ours["dpsgd"], theirs["dpsgd"], rtol=1e-5, atol=1e-6)


def test_the_tolerances_fail_a_clip_one_percent_larger() -> None:
    """The float64 reference at rtol 1e-10 and opacus at rtol 1e-5: a clip 1 % larger is far outside both."""
    model, phi, batch = _mlp_phi()
    grads = per_example_grads(phi, *batch)
    clip = float(grads.norm(dim=1).median())
    engine = DPSGD(model, max_grad_norm=clip, expected_batch_size=len(batch[0]), **COMMON)
    assert_planted_fails(clipped_sums(engine, phi(*batch))["dpsgd"], clipped_sum(grads, 1.01 * clip), 1e-10, 1e-12)
    torch.manual_seed(1)
    model = MLPVAE(30, 4, 20)
    reference_model = copy.deepcopy(model)
    x, noise = torch.rand(16, 30), torch.randn(16, 4)
    ours = clipped_sums(DPSGD(model, max_grad_norm=2.0, expected_batch_size=16, **COMMON), model.loss(x, noise))
    reference = OpacusDPSGD(reference_model, max_grad_norm=2.02, noise_multiplier=1.0, expected_batch_size=16)
    theirs = clipped_sums(reference, reference_model.loss(x, noise))
    reference.close()
    assert_planted_fails(ours["dpsgd"], theirs["dpsgd"], 1e-5, 1e-6)


def test_clipped_sum_equals_opacus_conv() -> None:
    torch.manual_seed(2)
    model = ConvVAE(latent_dim=4, base_channels=4, norm="group", norm_groups=2)
    reference_model = copy.deepcopy(model)
    x, noise = torch.rand(6, 1, 32, 32), torch.randn(6, 1, 4)
    ours = clipped_sums(
        DPSGD(model, max_grad_norm=50.0, expected_batch_size=6, **COMMON), model.loss_terms(x, noise)[0]
    )
    reference = OpacusDPSGD(reference_model, max_grad_norm=50.0, noise_multiplier=1.0, expected_batch_size=6)
    theirs = clipped_sums(reference, reference_model.loss_terms(x, noise)[0])
    reference.close()
    torch.testing.assert_close(ours["dpsgd"], theirs["dpsgd"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("gram_advantage", [0.0, 1e9])
def test_subgroup_units_match_brute_force(monkeypatch: pytest.MonkeyPatch, gram_advantage: float) -> None:
    """Term-wise batch term on sub-groups of unequal size, several rows per example."""
    monkeypatch.setattr(layers, "GRAM_ADVANTAGE", gram_advantage)
    torch.manual_seed(3)
    model = RowsNet().double()
    x = torch.randn(11, 3, 4, dtype=torch.double)
    groups = random_groups(11, 4, torch.Generator().manual_seed(0))

    def terms() -> tuple[Tensor, Tensor]:
        out = model(x)
        psi = Units(groups, 4).sum_by_unit(out.sum(1)).square().sum(1)  # each group's loss mixes its members
        return out.square().sum((1, 2)), psi

    sample, psi = terms()
    sample_grads, batch_grads = unit_grads(model, sample), unit_grads(model, psi)
    c1, c2 = float(sample_grads.norm(dim=1).median()), float(batch_grads.norm(dim=1).median())
    ref_sample, ref_batch = clipped_sum(sample_grads, c1), clipped_sum(batch_grads, c2)
    engine = TermwiseDPSGD(model, sample_clip=c1, batch_clip=c2, expected_batch_size=11, num_groups=4, **COMMON)
    got = clipped_sums(engine, *terms(), groups)
    torch.testing.assert_close(got["sample"], ref_sample, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(got["batch"], ref_batch, rtol=1e-10, atol=1e-12)


def test_termwise_conv_with_mmd_matches_brute_force() -> None:
    """Equal sub-groups (no padding), unlike the unequal ones above."""
    model, x, noise = conv_case(batch=9, samples=1)
    prior = torch.randn(9, 4, dtype=torch.double)
    groups = random_groups(9, 3, torch.Generator().manual_seed(1))

    def terms() -> tuple[Tensor, Tensor]:
        return model.loss_terms(x, noise, prior, groups, 3, alpha=100.0)

    phi, psi = terms()
    sample_grads, batch_grads = unit_grads(model, phi), unit_grads(model, psi)
    c1, c2 = float(sample_grads.norm(dim=1).median()), float(batch_grads.norm(dim=1).median())
    engine = TermwiseDPSGD(model, sample_clip=c1, batch_clip=c2, expected_batch_size=9, num_groups=3, **COMMON)
    got = clipped_sums(engine, *terms(), groups)
    torch.testing.assert_close(got["sample"], clipped_sum(sample_grads, c1), rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(got["batch"], clipped_sum(batch_grads, c2), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("keep_floats", [0, engine_module.KEEP_FLOATS])
def test_micro_aggregation_matches_brute_force(monkeypatch: pytest.MonkeyPatch, keep_floats: int) -> None:
    monkeypatch.setattr(engine_module, "KEEP_FLOATS", keep_floats)
    model, x, noise = conv_case(batch=6, samples=1)
    prior = torch.randn(6, 4, dtype=torch.double)
    whole = torch.zeros(6, dtype=torch.long)

    def terms() -> tuple[Tensor, Tensor]:
        phi, psi = model.loss_terms(x, noise, prior, whole, 1, alpha=100.0)
        return phi, psi[0]

    phi, psi = terms()
    grads = unit_grads(model, phi + psi)  # unit i's loss is φ(x_i) + ψ(batch)
    clip = float(grads.norm(dim=1).median())
    engine = MicroAggregation(model, max_grad_norm=clip, expected_batch_size=6, **COMMON)
    torch.testing.assert_close(clipped_sums(engine, *terms())["micro"], clipped_sum(grads, clip), rtol=1e-9, atol=1e-12)


def test_batch_aggregation_clips_the_whole_batch_gradient() -> None:
    model, x, noise = mlp_case()
    full = unit_grads(model, model.loss(x, noise).mean()[None])[0]
    engine = BatchAggregation(model, max_grad_norm=0.5, **COMMON)
    got = clipped_sums(engine, model.loss(x, noise).mean())["batch"]
    assert full.norm() > 0.5
    torch.testing.assert_close(got, full * 0.5 / full.norm(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "stride,padding,output_padding,dilation,bias",
    [(1, 0, 0, 1, False), (2, 1, 0, 1, True), (2, 1, 1, 1, True), (3, 2, 2, 1, False), (2, 0, 0, 2, True)],
)
def test_conv_transpose2d_grad_sampler_matches_torch_func(
    stride: int, padding: int, output_padding: int, dilation: int, bias: bool
) -> None:
    torch.manual_seed(4)
    layer = nn.ConvTranspose2d(3, 5, 3, stride, padding, output_padding, bias=bias, dilation=dilation).double()
    x = torch.randn(4, 3, 5, 6, dtype=torch.double)
    grad_output = torch.randn_like(layer(x))

    def loss(p: dict[str, Tensor], xi: Tensor, gi: Tensor) -> Tensor:
        return (functional_call(layer, p, (xi[None],)) * gi[None]).sum()

    expected = vmap(grad(loss), in_dims=(None, 0, 0))(trainable(layer), x, grad_output)
    got = conv_transpose2d_grad_sample(layer, x, grad_output)
    assert set(got) == set(layer.parameters())
    for name, p in layer.named_parameters():
        torch.testing.assert_close(got[p], expected[name], rtol=1e-10, atol=1e-12)


CONV_LAYERS = {  # name: (layer, input size); the phase-Gram rule applies where kernel % stride == 0
    "k4s2p1": (lambda: nn.Conv2d(3, 5, 4, 2, 1), 8),
    "k4x2s2x1": (lambda: nn.Conv2d(3, 5, (4, 2), (2, 1), (1, 0)), 8),
    "k3s1p1": (lambda: nn.Conv2d(3, 5, 3, 1, 1, bias=False), 6),
    "k3s2-no-phase": (lambda: nn.Conv2d(3, 5, 3, 2, 1), 7),
    "dilated-no-phase": (lambda: nn.Conv2d(3, 5, 3, 1, 2, dilation=2), 7),
    "whole-input": (lambda: nn.Conv2d(3, 5, 4), 4),
    "transposed-k4s2p1": (lambda: nn.ConvTranspose2d(3, 5, 4, 2, 1), 4),
    "transposed-output-padding": (lambda: nn.ConvTranspose2d(3, 5, 4, 2, 1, output_padding=1), 4),
    "transposed-k3s1": (lambda: nn.ConvTranspose2d(3, 5, 3, 1, 0, bias=False), 4),
}


@pytest.mark.parametrize("name", list(CONV_LAYERS))
@pytest.mark.parametrize("gram_advantage", [0.0, 1e9])  # instantiation / per-unit kernel, then Gram / phase Gram
@pytest.mark.parametrize("host_sizes", [True, False])  # sub-group sizes read from host memory, or not (accelerator)
def test_conv_unit_norms_match_brute_force(
    monkeypatch: pytest.MonkeyPatch, name: str, gram_advantage: float, host_sizes: bool
) -> None:
    """Every per-unit norm path of a convolution (unfolded Gram, phase Gram, instantiation, the layer's own
    kernel per unit, per-example gradients summed into units, one Gram over all rows masked to units) and the
    unit gradients instantiated on the way, against autograd unit by unit: two rows per example,
    per-example units and sub-groups of unequal size with an empty one."""
    monkeypatch.setattr(layers, "GRAM_ADVANTAGE", gram_advantage)
    if not host_sizes:
        monkeypatch.setattr(Units, "host_sizes", lambda self: None)
    monkeypatch.setattr(layers, "CHUNK_FLOATS", 4096)  # several chunks
    torch.manual_seed(13)
    make, size = CONV_LAYERS[name]
    layer = make().double()
    x = torch.randn(2 * 7, 3, size, size, dtype=torch.double)
    grad_output = torch.randn_like(layer(x))
    view = layers.per_example_view(layer, [((x,), grad_output)], 7)
    assert (view.phase_sq_norms is not None) == (
        name in ("k4s2p1", "k4x2s2x1", "k3s1p1", "transposed-k4s2p1", "transposed-output-padding", "transposed-k3s1")
    )
    for units in (Units.per_example(7), Units(torch.tensor([2, 0, 2, 0, 0, 3, 2]), 4)):
        expected = []
        for unit in range(units.count):
            rows = torch.nonzero(units.index.repeat_interleave(2) == unit).squeeze(1)
            loss = (layer(x[rows]) * grad_output[rows]).sum()
            expected.append(torch.autograd.grad(loss, list(layer.parameters())))
        sq_norms, unit_grads = view.unit_norms_and_grads(units, keep_floats=10**6)
        torch.testing.assert_close(
            sq_norms, torch.stack([sum(g.square().sum() for g in e) for e in expected]), rtol=1e-10, atol=1e-12
        )
        assert (unit_grads is not None) == (gram_advantage == 0)  # instantiated, not Gram
        for i, p in enumerate(layer.parameters() if unit_grads is not None else []):
            torch.testing.assert_close(unit_grads[p], torch.stack([e[i] for e in expected]), rtol=1e-10, atol=1e-12)


def test_group_norm_grads_match_opacus(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chunked per-example GroupNorm rule equals opacus' grad sampler."""
    from opacus.grad_sample import GradSampleModule

    monkeypatch.setattr(layers, "CHUNK_FLOATS", 100)  # several chunks
    torch.manual_seed(14)
    layer = nn.GroupNorm(2, 6).double()
    layer.weight.data.normal_()
    x, grad_output = torch.randn(9, 6, 3, 4, dtype=torch.double), torch.randn(9, 6, 3, 4, dtype=torch.double)
    ours = layers.GRAD_SAMPLERS[nn.GroupNorm](layer, [x], grad_output)
    theirs = GradSampleModule.GRAD_SAMPLERS[nn.GroupNorm](layer, [x], grad_output)
    assert set(ours) == set(theirs) == {layer.weight, layer.bias}
    for p in ours:
        torch.testing.assert_close(ours[p], theirs[p], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("transposed", [False, True])
def test_dense_conv_grads_equal_autograd(transposed: bool) -> None:
    """A convolution that is a dense layer in disguise gets its gradient by one matrix product; others get None."""
    torch.manual_seed(15)
    layer = (nn.ConvTranspose2d(6, 4, 3) if transposed else nn.Conv2d(6, 4, 3)).double()
    x = torch.randn(5, 6, *((1, 1) if transposed else (3, 3)), dtype=torch.double)
    grad_output = torch.randn_like(layer(x))
    got = layers.dense_conv_grads(layer, x, grad_output)
    expected = torch.autograd.grad(layer(x), [layer.weight, layer.bias], grad_output)
    for p, g in zip([layer.weight, layer.bias], expected):
        torch.testing.assert_close(got[p], g, rtol=1e-12, atol=1e-12)
    larger = torch.randn(5, 6, 4, 4, dtype=torch.double)
    assert layers.dense_conv_grads(layer, larger, layer(larger)) is None


@pytest.mark.parametrize("name", [*CONV_LAYERS, "linear-rows"])
def test_weight_grads_equal_autograd(name: str) -> None:
    """The engine's weight-gradient pass by the layer's own formula, over two calls of the layer."""
    torch.manual_seed(16)
    if name == "linear-rows":
        layer, shape = nn.Linear(3, 5).double(), (4, 2, 3)
    else:
        make, size = CONV_LAYERS[name]
        layer, shape = make().double(), (4, 3, size, size)
    calls = [(torch.randn(shape, dtype=torch.double),) for _ in range(2)]
    grad_outputs = [torch.randn_like(layer(*inputs)) for inputs in calls]
    params = [p for p in layer.parameters() if p.requires_grad]
    expected = torch.autograd.grad([layer(*inputs) for inputs in calls], params, grad_outputs)
    got = layers.weight_grads(layer, list(zip(calls, grad_outputs)))
    assert set(got) == set(params)
    for p, g in zip(params, expected):
        torch.testing.assert_close(got[p], g, rtol=1e-12, atol=1e-12)


# -- sensitivity ------------------------------------------------------------------------------


def test_standard_dpsgd_sensitivity_is_the_clip_norm() -> None:
    model, x, noise = mlp_case(batch=10)
    engine = DPSGD(model, max_grad_norm=1.0, expected_batch_size=10, **COMMON)

    def pre_noise(x: Tensor, noise: Tensor) -> dict[str, Tensor]:
        return clipped_sums(engine, model.loss(x, noise))

    removed = measured_sensitivity(pre_noise, (x, noise), records=range(10))
    replaced = measured_sensitivity(
        pre_noise,
        (x, noise),
        records=range(10),
        replacement=(torch.zeros(12, dtype=torch.double), torch.zeros(3, dtype=torch.double)),
    )
    assert 0.9 < removed <= 1.0 + 1e-9  # every example is clipped, so removing one moves the sum by exactly C
    assert 1.0 < replaced <= 2.0 + 1e-9  # replace-one: two clipped gradients differ by at most 2C
    assert engine.noise_profile().sensitivity == 1.0


def test_termwise_sensitivity_bound_and_subgroup_counter_example() -> None:
    """Removing a record moves g_sample by ≤ C1 but the clipped sub-group gradient by up to 2·C2 (the
    sub-group is modified, not removed), so Lemma 2's C1 + C2 is exceeded while C1 + 2·C2 holds."""
    model = nn.Linear(2, 1, bias=False).double()
    model.weight.data.zero_()
    x = torch.tensor([[10.0, 0.0], [-5.0, 1.0], [3.0, 3.0], [0.0, -4.0]], dtype=torch.double)
    groups = torch.tensor([0, 0, 1, 1])
    engine = TermwiseDPSGD(model, sample_clip=1.0, batch_clip=1.0, expected_batch_size=4, num_groups=2, **COMMON)

    def pre_noise(x: Tensor, groups: Tensor) -> dict[str, Tensor]:
        out = model(x).squeeze(1)  # φ_i = w·x_i, ψ_j = w·Σ_{i∈s_j} x_i (gradients x_i and the group sums)
        return clipped_sums(engine, out, Units(groups, 2).sum_by_unit(out), groups)

    change = measured_sensitivity(pre_noise, (x, groups), records=[0])
    assert change > 1.0 + 1.0 + 0.5  # > C1 + C2 (group sum turns from (5, 1) to (−5, 1))
    assert change <= 1.0 + 2 * 1.0 + 1e-9
    assert engine.noise_profile().sound_sensitivity == 3.0


def test_termwise_sensitivity_on_the_conv_vae_within_sound_bound() -> None:
    model, x, noise = conv_case(batch=8, samples=1)
    prior = torch.randn(8, 4, dtype=torch.double)
    groups = random_groups(8, 2, torch.Generator().manual_seed(2))
    engine = TermwiseDPSGD(model, sample_clip=1.0, batch_clip=0.1, expected_batch_size=8, num_groups=2, **COMMON)

    def pre_noise(x: Tensor, noise: Tensor, prior: Tensor, groups: Tensor) -> dict[str, Tensor]:
        return clipped_sums(engine, *model.loss_terms(x, noise, prior, groups, 2, alpha=100.0), groups)

    change = measured_sensitivity(pre_noise, (x, noise, prior, groups), records=range(8))
    assert 1.0 <= change <= 1.0 + 2 * 0.1 + 1e-9


def test_micro_aggregation_moves_by_more_than_clip() -> None:
    """PriVAE Proposition 3: with a shared batch-wise term one record moves every clipped gradient."""
    model = nn.Linear(2, 1, bias=False).double()
    model.weight.data.zero_()
    x = torch.tensor([[4.0, 1.0], [4.0, -1.0], [3.0, 0.5], [-9.0, 0.2], [2.0, 2.0]], dtype=torch.double)
    engine = MicroAggregation(model, max_grad_norm=1.0, expected_batch_size=5, **COMMON)

    def pre_noise(x: Tensor) -> dict[str, Tensor]:
        out = model(x).squeeze(1)
        return clipped_sums(engine, 0.01 * out, out.sum())  # ψ(batch) = w·Σx dominates each unit's gradient

    change = measured_sensitivity(pre_noise, (x,), records=range(5))
    assert change > 2.0  # far above the clip C = 1 a per-example analysis would assume
    assert change <= engine.noise_profile().sound_sensitivity + 1e-9


# -- noise ----------------------------------------------------------------------------------------


def _noise_std(engine_factory, run, scales: dict[str, float]) -> tuple[float, float]:
    """Empirical per-coordinate std of .grad minus the noiseless scaled aggregate, and the engine's formula."""
    torch.manual_seed(5)
    model = MLPVAE(60, 8, 100)
    engine = engine_factory(model)
    torch.manual_seed(6)
    noiseless = sum(scales[name] * s for name, s in run(model, lambda *a: clipped_sums(engine, *a)).items())
    torch.manual_seed(6)
    run(model, lambda *a: engine.step(*a))
    released = torch.cat([p.grad.flatten() for p in model.parameters()])
    return float((released - noiseless).std()), engine.noise_profile().noise_std


def _mlp_terms(model: MLPVAE, groups: Tensor) -> tuple[Tensor, Tensor]:
    mu, logvar = model.encode(x := torch.rand(len(groups), 60))
    z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
    phi = (model.decode(z) - x).square().sum(1)
    return phi, mmd_dim(z, torch.randn_like(z), Units(groups, int(groups.max()) + 1))


@pytest.mark.parametrize("kind", ["dpsgd", "termwise", "micro", "batch"])
def test_noise_std_matches_formula(kind: str) -> None:
    g = torch.Generator().manual_seed(7)
    groups = random_groups(32, 4, g)
    whole = torch.zeros(32, dtype=torch.long)
    if kind == "dpsgd":

        def factory(m):
            return DPSGD(
                m, max_grad_norm=0.5, noise_multiplier=1.3, sample_rate=0.1, expected_batch_size=40, generator=g
            )

        def run(m, f):
            return f(_mlp_terms(m, groups)[0])

        scales, expected = {"dpsgd": 1 / 40}, 1.3 * 0.5 / 40
    elif kind == "termwise":

        def factory(m):
            return TermwiseDPSGD(
                m,
                sample_clip=0.5,
                batch_clip=0.2,
                noise_multiplier=2.0,
                sample_rate=0.1,
                expected_batch_size=40,
                num_groups=4,
                generator=g,
            )

        def run(m, f):
            return f(*_mlp_terms(m, groups), groups)

        scales, expected = {"sample": 1 / 40, "batch": 1 / 4}, 2.0 * math.hypot(0.5 / 40, 0.2 / 4)
    elif kind == "micro":

        def factory(m):
            return MicroAggregation(
                m, max_grad_norm=0.5, noise_multiplier=1.3, sample_rate=0.1, expected_batch_size=40, generator=g
            )

        def run(m, f):
            phi, psi = _mlp_terms(m, whole)
            return f(phi, psi[0])

        scales, expected = {"micro": 1 / 40}, 1.3 * 0.5
    else:

        def factory(m):
            return BatchAggregation(m, max_grad_norm=0.5, noise_multiplier=1.3, sample_rate=0.1, generator=g)

        def run(m, f):
            phi, psi = _mlp_terms(m, whole)
            return f(phi.mean() + psi[0])

        scales, expected = {"batch": 1.0}, 1.3 * 0.5
    empirical, formula = _noise_std(factory, run, scales)
    assert formula == pytest.approx(expected)
    assert empirical == pytest.approx(expected, rel=0.03)  # ~15k coordinates: sampling error ≈ 0.6 %


def test_termwise_table_noise_scale_is_papers_expression() -> None:
    engine = TermwiseDPSGD(
        nn.Linear(2, 2),
        sample_clip=0.05,
        batch_clip=0.005,
        noise_multiplier=2.0,
        sample_rate=256 / 60000,
        expected_batch_size=256,
        num_groups=16,
    )
    profile = engine.noise_profile()
    assert profile.table_noise_scale == pytest.approx((0.05 / 256 + 0.005 / 16) * 2.0)
    assert profile.sensitivity == pytest.approx(0.055)
    assert profile.noise_std < profile.table_noise_scale


def test_batch_term_ignored_when_its_clip_is_zero() -> None:
    model, x, noise = mlp_case()
    engine = TermwiseDPSGD(model, sample_clip=1.0, batch_clip=0.0, expected_batch_size=7, num_groups=2, **COMMON)
    out = clipped_sums(engine, model.loss(x, noise), torch.zeros(0), torch.zeros(0, dtype=torch.long))
    assert list(out) == ["sample"]
    assert [m.name for m in engine.mechanisms()] == ["termwise.sample"]


# -- accounting records ----------------------------------------------------------------------------


def test_mechanisms_report_multiplier_rate_steps_and_sensitivity() -> None:
    model, x, noise = mlp_case()
    engine = TermwiseDPSGD(
        model,
        sample_clip=0.05,
        batch_clip=0.005,
        noise_multiplier=2.0,
        sample_rate=0.02,
        expected_batch_size=7,
        num_groups=2,
    )
    groups = random_groups(7, 2)
    for _ in range(3):
        phi = model.loss(x, noise)
        engine.step(phi, Units(groups, 2).sum_by_unit(phi), groups)
    sample, batch = engine.mechanisms()
    assert (sample.name, sample.noise_multiplier, sample.sample_rate, sample.steps, sample.sensitivity) == (
        "termwise.sample",
        2.0,
        0.02,
        3,
        0.05,
    )
    assert (batch.noise_multiplier, batch.sensitivity) == (2.0, 0.005)
    (sound,) = engine.mechanisms(sound=True)  # the released gradient: sensitivity C1/B + 2 C2/b
    c1, c2 = 0.05 / 7, 0.005 / 2
    assert sound.sensitivity == pytest.approx(c1 + 2 * c2)
    assert sound.noise_multiplier == pytest.approx(2.0 * math.hypot(c1, c2) / (c1 + 2 * c2))
    assert sound.steps == 3 and sound.sample_rate == 0.02
    micro = MicroAggregation(
        nn.Linear(2, 2), max_grad_norm=0.1, noise_multiplier=1.5, sample_rate=0.1, expected_batch_size=8
    )
    (record,) = micro.mechanisms()
    assert record.sensitivity == pytest.approx(0.8) and record.noise_multiplier == pytest.approx(1.5)
    (micro_sound,) = micro.mechanisms(sound=True)  # the released average moves by ≤ 2C for any batch size
    assert micro_sound.sensitivity == pytest.approx(0.2) and micro_sound.noise_multiplier == pytest.approx(0.75)
    (batch_record,) = BatchAggregation(nn.Linear(2, 2), max_grad_norm=0.1, **COMMON).mechanisms(sound=True)
    assert batch_record.noise_multiplier == pytest.approx(0.5)
    (plain,) = DPSGD(nn.Linear(2, 2), max_grad_norm=0.1, expected_batch_size=8, **COMMON).mechanisms(sound=True)
    assert plain.noise_multiplier == pytest.approx(1.0) and plain.sensitivity == pytest.approx(0.1 / 8)


def test_random_groups_are_independent_uniform_labels() -> None:
    """Each example's sub-group is drawn independently (so adding a record moves no other record)."""
    generator = torch.Generator().manual_seed(3)
    labels = random_groups(200_000, 16, generator)
    counts = torch.bincount(labels, minlength=16).double()
    chi2 = (((counts - counts.mean()) ** 2) / counts.mean()).sum().item()
    assert labels.min() == 0 and labels.max() == 15 and chi2 < 45  # chi2(15) 99.99th pct ~ 44
    sizes = torch.stack([torch.bincount(random_groups(32, 16, generator), minlength=16) for _ in range(2000)])
    assert sizes.double().var().item() == pytest.approx(32 * (1 / 16) * (15 / 16), rel=0.1)  # multinomial


# -- partial-model DP, validation ------------------------------------------------------------------


@pytest.mark.parametrize("public_clip", [None, 0.7])
def test_partial_model_dp(public_clip: float | None) -> None:
    torch.manual_seed(8)
    model = MLPVAE(12, 3, 10, pca_components=torch.randn(12, 3), pca_mean=torch.rand(12)).double()
    x, noise = torch.rand(9, 12, dtype=torch.double), torch.randn(9, 3, dtype=torch.double)
    decoder = [*model.fc3.parameters(), *model.fc4.parameters()]
    engine = DPSGD(
        model,
        max_grad_norm=0.5,
        noise_multiplier=1.0,
        sample_rate=0.1,
        expected_batch_size=10,
        private_params=decoder,
        public_max_grad_norm=public_clip,
        public_uses_private_data=True,
        max_batch_size=12,
    )
    engine.step(model.loss(x, noise))
    public = ["fc1.weight", "fc1.bias", "fc22.weight", "fc22.bias"]
    if public_clip is None:
        plain = torch.autograd.grad(model.loss(x, noise).sum() / 10, [model.get_parameter(n) for n in public])
        expected = torch.cat([g.flatten() for g in plain])
    else:
        per_example = per_example_grads(MLPLoss(model), x, noise)
        names = [n for n, p in model.named_parameters() if p.requires_grad]
        columns = torch.cat([torch.full((model.get_parameter(n).numel(),), n in public) for n in names])
        expected = clipped_sum(per_example[:, columns], public_clip) / 10
    got = torch.cat([model.get_parameter(n).grad.flatten() for n in public])
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)
    assert model.pca.weight.grad is None and model.pca.bias.grad is None
    assert all(p.grad is not None for p in decoder)
    assert [m.sensitivity for m in engine.mechanisms()] == [0.5]  # the paper's claim ignores the encoder
    (sound,) = engine.mechanisms(sound=True)  # every unit of a step moves by 2C, no amplification
    assert (sound.sample_rate, sound.steps) == (1.0, 1)
    assert sound.sensitivity == pytest.approx(2 * 0.5 * 12 / 10) and sound.noise_multiplier == pytest.approx(1.0 / 24)
    with pytest.raises(ValueError, match="max_batch_size"):
        engine.step(model.loss(torch.rand(13, 12, dtype=torch.double), torch.randn(13, 3, dtype=torch.double)))


def test_undeclared_public_updates_are_refused() -> None:
    """Trainable parameters outside private_params would learn from the private batch without noise."""
    model = MLPVAE(12, 3, 10)
    decoder = [*model.fc3.parameters(), *model.fc4.parameters()]
    with pytest.raises(ValueError, match="public_uses_private_data"):
        DPSGD(model, max_grad_norm=0.5, expected_batch_size=10, private_params=decoder, **COMMON)
    for module in (model.fc1, model.fc2, model.fc22):
        module.requires_grad_(False)  # frozen public parameters are fine
    DPSGD(model, max_grad_norm=0.5, expected_batch_size=10, private_params=decoder, **COMMON)
    with pytest.raises(ValueError, match="every trainable parameter is private"):
        DPSGD(
            model,
            max_grad_norm=0.5,
            expected_batch_size=10,
            private_params=decoder,
            public_uses_private_data=True,
            **COMMON,
        )


def test_batchnorm_is_rejected_with_a_clear_message() -> None:
    with pytest.raises(ValueError, match="BatchNorm"):
        DPSGD(ConvVAE(latent_dim=4, base_channels=4, norm="batch"), max_grad_norm=1.0, expected_batch_size=4, **COMMON)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    public = dict(public_uses_private_data=True, max_batch_size=4)
    with pytest.raises(ValueError, match="training mode"):  # a public BatchNorm still mixes examples
        DPSGD(model, max_grad_norm=1.0, expected_batch_size=4, private_params=model[2].parameters(), **public, **COMMON)
    model[1].eval()
    engine = DPSGD(
        model, max_grad_norm=1.0, expected_batch_size=4, private_params=model[2].parameters(), **public, **COMMON
    )
    model.train()  # switched back after construction: caught at the next step
    with pytest.raises(ValueError, match="training mode"):
        engine.step(model(torch.randn(4, 3)).sum(1))


def test_in_place_change_of_a_layer_output_is_rejected() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True), nn.Linear(4, 1))
    engine = DPSGD(model, max_grad_norm=1.0, expected_batch_size=4, **COMMON)
    with pytest.raises(ValueError, match="in place"):
        engine.step(model(torch.randn(4, 3)).squeeze(1))


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(max_grad_norm=0.0), "max_grad_norm"),
        (dict(noise_multiplier=-1.0), "noise_multiplier"),
        (dict(sample_rate=0.0), "sample_rate"),
        (dict(expected_batch_size=-3), "expected_batch_size"),
        (dict(private_params=[nn.Parameter(torch.zeros(1))]), "private_params"),
    ],
)
def test_bad_arguments_raise(kwargs: dict, match: str) -> None:
    options = dict(max_grad_norm=1.0, noise_multiplier=1.0, sample_rate=0.1, expected_batch_size=4) | kwargs
    with pytest.raises(ValueError, match=match):
        DPSGD(nn.Linear(2, 2), **options)


def test_a_step_without_its_own_forward_pass_is_refused() -> None:
    """Two forward passes, then two steps: the first consumes both recordings, the second would release a
    zero gradient; it is refused instead."""
    model = nn.Linear(2, 1)
    engine = DPSGD(model, max_grad_norm=1.0, expected_batch_size=4, **COMMON)
    first, second = model(torch.randn(4, 2)).squeeze(1), model(torch.randn(4, 2)).squeeze(1)
    engine.step(first)
    with pytest.raises(ValueError, match="no forward pass"):
        engine.step(second)


def test_losses_must_be_per_example() -> None:
    model = nn.Linear(2, 1)
    engine = DPSGD(model, max_grad_norm=1.0, expected_batch_size=4, **COMMON)
    with pytest.raises(ValueError, match="losses"):
        engine.step(model(torch.randn(4, 2)).sum())


def test_empty_poisson_batch_releases_noise_only() -> None:
    model = MLPVAE(6, 2, 5)
    engine = DPSGD(model, max_grad_norm=1.0, expected_batch_size=4, noise_multiplier=1.0, sample_rate=0.1)
    engine.step(model.loss(torch.rand(0, 6)))
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


# -- sampling ---------------------------------------------------------------------------------


def test_poisson_sample_mean_size_and_validity() -> None:
    g = torch.Generator().manual_seed(9)
    sizes = torch.tensor([len(poisson_sample(5000, 0.02, g)) for _ in range(300)], dtype=torch.double)
    assert abs(float(sizes.mean()) - 100) < 4 * math.sqrt(100 * 0.98 / 300)
    assert float(sizes.std()) == pytest.approx(math.sqrt(100 * 0.98), rel=0.15)
    batch = poisson_sample(5000, 0.02, g)
    assert torch.equal(batch, torch.unique(batch)) and int(batch.max()) < 5000
    assert len(poisson_sample(10, 1.0)) == 10
    with pytest.raises(ValueError, match="sample_rate"):
        poisson_sample(10, 0.0)


def test_random_groups_is_random_and_validated() -> None:
    groups = random_groups(37, 5, torch.Generator().manual_seed(10))
    assert groups.shape == (37,) and int(torch.bincount(groups, minlength=5).sum()) == 37
    other = random_groups(37, 5, torch.Generator().manual_seed(11))
    assert not torch.equal(groups, other)
    with pytest.raises(ValueError, match="num_groups"):
        random_groups(4, 0)


# -- benchmark smoke test ------------------------------------------------------------------------


def test_benchmark_quick_runs_every_case() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "dpsgd_step.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        env=env,
    )  # this checkout's src
    header, *rest = result.stdout.strip().splitlines()
    assert header.startswith("# device=cpu name="), header
    pattern = re.compile(
        r"^model=(mlp|conv) engine=([\w-]+) device=cpu clock=(wall|cpu) sec_per_step=\d+\.\d{4} "
        r"ratio_to_nonprivate=\d+\.\d{2} ops_per_step=\d+\.\d syncs_per_step=(\d+\.\d)$"
    )
    lines = [pattern.match(line) for line in rest]
    assert all(lines), result.stdout
    cases = {(m.group(1), m.group(2)) for m in lines}
    for model in ("mlp", "conv"):
        for engine in ("nonprivate", "loop", "opacus", "dpsgd", "termwise", "micro", "batch", "partial"):
            assert (model, engine) in cases
