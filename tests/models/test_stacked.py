"""K models at once (`dpvae.models.stacked`) are exactly K single models: losses, gradients, clipping, Adam.

In float64: the equalities are exact math, and some float32 gradients (a bias whose terms cancel to ~1e-6)
differ by rounding alone with the order of the sums. The float64 tolerance is a rounding bound: every compared
value is a sum of at most ~1e3 products of O(1) terms, exact to γ_n ≈ n·u ≈ 1e-13 relative (u = 2^-53;
tests/support/tolerances.py), reordered alike by a stacked kernel or another thread count; measured on this
2-core CPU (seeds 0 and 1, 1 and 2 threads; benchmarks/measured/cpu-2026-12-01/tolerances.log): at most 9.2e-4
of it (gradients), 2.6e-5 (clipped gradients), 1.1e-4 (Adam, atol alone). A planted clip of 0.505 for 0.5 lies
~9e7 tolerances away."""

from __future__ import annotations

import pytest
import torch

from dpvae.models import gswgan as nets
from dpvae.models.cvae import CVAE, stacked_loss
from dpvae.models.stacked import StackedAdam, Streams, clip_per_model, stack, unstack
from support.tolerances import assert_planted_fails

#: float64 (the module's docstring): a rounding bound with ~1000x to spare
RTOL64, ATOL64 = 1e-10, 1e-12


@pytest.fixture()
def models() -> list[CVAE]:
    torch.manual_seed(0)
    return [CVAE((1, 12, 12), 3, 2, [4, 6]).double() for _ in range(3)]


def _batch(k: int, b: int = 5):
    generator = torch.Generator().manual_seed(1)
    x = torch.rand(k, b, 1, 12, 12, generator=generator, dtype=torch.float64)
    onehot = torch.nn.functional.one_hot(torch.randint(3, (k, b), generator=generator), 3).double()
    return x, onehot, torch.randn(k, b, 2, generator=generator, dtype=torch.float64)


def test_stacked_loss_and_gradients_equal_each_single_model(models):
    params = stack(models)
    x, onehot, noise = _batch(len(models))
    losses = stacked_loss(models[0], params, x, onehot, noise)
    grads = torch.autograd.grad(losses.mean(1).sum(), list(params.values()))
    for i, model in enumerate(models):
        single = model.loss(x[i], onehot[i], noise[i])
        torch.testing.assert_close(losses[i], single, rtol=RTOL64, atol=ATOL64)
        assert_planted_fails(losses[(i + 1) % len(models)], single, RTOL64, ATOL64)  # a stack mixing its members
        single.mean().backward()
        for (name, p), g in zip(model.named_parameters(), grads):
            torch.testing.assert_close(g[i], p.grad, rtol=RTOL64, atol=ATOL64, msg=name)


def _clipped(models: list[CVAE], clip: float) -> dict[str, torch.Tensor]:
    """The stacked models' gradients, clipped per model and per network to `clip`."""
    params = stack(models)
    x, onehot, noise = _batch(len(models))
    loss = stacked_loss(models[0], params, x, onehot, noise).mean(1).sum()
    grads = dict(zip(params, torch.autograd.grad(loss, list(params.values()))))
    encoder = [n for n in grads if n.startswith("encoder.")]
    decoder = [n for n in grads if n.startswith("decoder.")]
    clip_per_model(grads, [encoder, decoder], clip)
    return grads


def test_per_model_clipping_matches_clip_grad_norm(models):
    """To RTOL64, ATOL64; a planted clip 1 % larger is far outside."""
    grads, planted = _clipped(models, 0.5), _clipped(models, 0.505)
    x, onehot, noise = _batch(len(models))
    for i, model in enumerate(models):
        model.loss(x[i], onehot[i], noise[i]).mean().backward()
        torch.nn.utils.clip_grad_norm_(model.encoder.parameters(), 0.5)
        torch.nn.utils.clip_grad_norm_(model.decoder.parameters(), 0.5)
        expected = dict(model.named_parameters())
        for name, p in expected.items():
            torch.testing.assert_close(grads[name][i], p.grad, rtol=RTOL64, atol=ATOL64, msg=name)
        assert_planted_fails(
            {n: planted[n][i] for n in expected}, {n: p.grad for n, p in expected.items()}, RTOL64, ATOL64
        )


def test_stacked_adam_is_k_independent_torch_adams_also_one_row_at_a_time(models):
    params = stack(models)
    adam = StackedAdam(params, 1e-2)
    singles = [torch.optim.Adam(m.parameters(), 1e-2) for m in models]
    generator = torch.Generator().manual_seed(2)
    for step in range(4):
        rows = None if step % 2 == 0 else torch.tensor([1])
        grads = {n: torch.randn(p.shape, generator=generator, dtype=p.dtype) for n, p in params.items()}
        adam.step(grads if rows is None else {n: g[rows] for n, g in grads.items()}, rows=rows)
        for i, (model, opt) in enumerate(zip(models, singles)):
            if rows is not None and i not in rows.tolist():
                continue
            for n, p in model.named_parameters():
                p.grad = grads[n][i].clone()
            opt.step()
    for i, model in enumerate(models):
        for n, value in unstack(params, i).items():
            torch.testing.assert_close(value, dict(model.named_parameters())[n], rtol=0, atol=ATOL64, msg=f"{i} {n}")
    assert_planted_fails(unstack(params, 0), dict(models[1].named_parameters()), 0, ATOL64)  # members mixed


def test_gswgan_networks_of_a_stack_do_not_interact():
    """float32, images in [0, 1] and scores below 0.3 in absolute value: the stack and a member alone differ by
    at most 5.1e-7 (images) and 1.2e-7 (scores) on this CPU (seeds 0 and 1, 1 and 2 threads): absolute
    tolerances 1e-5 and 1e-6 keep margins of 20x and 8x; another member's image lies > 100 tolerances away."""
    torch.manual_seed(0)
    g, gu = nets.init_generator(3, 4, 2)
    d, du = nets.init_discriminator(3, 2)
    streams = Streams([torch.Generator().manual_seed(seed) for seed in range(3)])
    z = nets.bernoulli_latent(streams, (4, 4))
    y = streams.randint(10, (4,))
    images = nets.generator(g, dict(gu), z, y, update=False)
    scores = nets.discriminator(d, dict(du), images, y, update=False)
    assert images.shape == (3, 4, 1, 28, 28) and scores.shape == (3, 4)
    for i in range(3):
        gi = {n: t[i : i + 1] for n, t in g.items()}
        di = {n: t[i : i + 1] for n, t in d.items()}
        alone = nets.generator(gi, {n: t[i : i + 1] for n, t in gu.items()}, z[i : i + 1], y[i : i + 1], update=False)
        torch.testing.assert_close(images[i], alone[0], rtol=0, atol=1e-5)
        assert_planted_fails(images[(i + 1) % 3], alone[0], 0, 1e-5)  # a stack mixing its members
        score = nets.discriminator(di, {n: t[i : i + 1] for n, t in du.items()}, alone, y[i : i + 1], update=False)
        torch.testing.assert_close(scores[i], score[0], rtol=0, atol=1e-6)


def test_spectral_normalisation_converges_to_unit_spectral_norm():
    torch.manual_seed(0)
    d, du = nets.init_discriminator(2, 3)
    for _ in range(50):
        w = nets.spectral(d, du, "conv1", update=True)
    for i in range(2):
        assert float(torch.linalg.matrix_norm(w[i].detach().reshape(w.shape[1], -1), ord=2)) == pytest.approx(
            1.0, rel=1e-3
        )


def test_a_models_random_draws_do_not_depend_on_the_stack_it_is_in():
    def streams(seeds: list[int]) -> Streams:
        return Streams([torch.Generator().manual_seed(seed) for seed in seeds])

    together, alone = streams([5, 6, 7]), [streams([seed]) for seed in (5, 6, 7)]
    for _ in range(2):
        uniform, integers = together.rand((4, 2)), together.randint(10, (3,))
        assert uniform.shape == (3, 4, 2) and integers.shape == (3, 3)
        for k, one in enumerate(alone):
            assert torch.equal(uniform[k], one.rand((4, 2))[0]) and torch.equal(integers[k], one.randint(10, (3,))[0])
    assert not torch.equal(uniform[0], uniform[1])
