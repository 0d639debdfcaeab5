"""Device mixing, caught on the CPU: the `meta` device stands in for a GPU (a tensor there has a device and a
shape but no data), so code that leaves a tensor on the CPU while its inputs live elsewhere fails here as it
would on CUDA. Each test failed on the code before the fix it guards (device errors of the first CUDA runs)."""

from __future__ import annotations

import os

import torch

from dpvae.devices import repeatable, resolve_device
from dpvae.models.losses import sample_gaussian_mixture, sample_sparse_prior
from dpvae.models.stacked import StackedAdam

MOG_MEANS = torch.tensor([[0.0, 1.0], [1.0, 0.0], [-1.0, 0.0]])


def test_mixture_draws_land_on_the_means_device():
    """PriVAE's pinwheel prior: CPU-seeded draws added to means on another device (crashed on CUDA)."""
    z = sample_gaussian_mixture(7, MOG_MEANS.to("meta"), 0.1, torch.Generator().manual_seed(0))
    assert z.device.type == "meta" and z.shape == (7, 2)


def test_mixture_draws_do_not_depend_on_the_means_device():
    """The same CPU stream gives the same draws as before the fix, wherever the means are."""
    generator = torch.Generator().manual_seed(3)
    component = torch.randint(3, (5,), generator=generator)
    expected = MOG_MEANS[component] + 0.1 * torch.randn(5, 2, generator=generator)
    assert torch.equal(sample_gaussian_mixture(5, MOG_MEANS, 0.1, torch.Generator().manual_seed(3)), expected)


def test_sparse_prior_draws_on_the_generators_device():
    generator = torch.Generator().manual_seed(0)
    assert sample_sparse_prior((4, 3), 0.5, generator=generator).device.type == "cpu"
    assert sample_sparse_prior((4, 3), 0.5).shape == (4, 3)


def test_stacked_adam_keeps_its_step_counts_beside_the_parameters():
    """GS-WGAN / DP²-VAE: the per-model step counts lived on the CPU; indexing them with rows on CUDA failed."""
    params = {"w": torch.zeros(4, 3, 2, device="meta"), "b": torch.zeros(4, 2, device="meta")}
    adam = StackedAdam(params, lr=1e-3)
    assert adam.t.device.type == "meta"
    adam.step({k: torch.ones_like(v[:1]) for k, v in params.items()}, rows=torch.tensor([2], device="meta"))


def test_stacked_adam_counts_steps_per_model():
    params = {"w": torch.zeros(3, 2)}
    adam = StackedAdam(params, lr=1e-3)
    adam.step({"w": torch.ones(1, 2)}, rows=torch.tensor([1]))
    adam.step({"w": torch.ones(3, 2)})
    assert adam.t.tolist() == [1.0, 2.0, 1.0]


def test_auto_device_and_the_cpu_left_as_it_is(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu" and resolve_device("cuda:1") == "cuda:1"
    before = torch.are_deterministic_algorithms_enabled()
    repeatable("cpu")
    assert torch.are_deterministic_algorithms_enabled() == before


def test_cuda_jobs_ask_for_deterministic_kernels(monkeypatch):
    """On CUDA, DP²-VAE's two samplings of one run differed by a float32 ulp until these were set."""
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    before = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        torch.backends.cudnn.benchmark,
        torch.backends.cudnn.deterministic,
    )
    try:
        repeatable("cuda")
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
        assert torch.are_deterministic_algorithms_enabled() and torch.backends.cudnn.deterministic
        assert not torch.backends.cudnn.benchmark
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = before[2], before[3]
