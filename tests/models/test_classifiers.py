"""HalfDropout, the CNN classifier's Dropout(0.5): each element kept (doubled) with probability 1/2, independently
of its neighbours (the 8 elements one random byte serves included), identity in evaluation, other masks per vmapped
fit."""

from __future__ import annotations

import numpy as np
import torch
from torch.func import vmap

from dpvae.models.classifiers import HalfDropout, cnn

N = 64_000  # elements: the mean's and a correlation's sd is ~0.004 (keep rate) and ~0.004 (neighbours)


def _kept(mask_input: torch.Tensor, seed: int = 0) -> np.ndarray:
    torch.manual_seed(seed)
    out = HalfDropout().train()(mask_input)
    values = set(out.unique().tolist())
    assert values <= {0.0, 2.0}, values
    return (out > 0).numpy().astype(float).ravel()


def test_each_element_is_kept_with_probability_one_half_and_doubled():
    kept = _kept(torch.ones(N))
    assert abs(kept.mean() - 0.5) < 0.02  # 5 sd


def test_neighbours_within_and_across_a_random_byte_are_independent():
    """Lag 1 to 8 (the bits of one byte, and the next byte's): correlation ~0. Fails when a byte's bits repeat or
    the shifts are wrong (lag-8 correlation 1, or keep rate away from 1/2)."""
    kept = _kept(torch.ones(N)) - 0.5
    for lag in range(1, 9):
        correlation = float(np.mean(kept[:-lag] * kept[lag:]) / 0.25)
        assert abs(correlation) < 0.025, (lag, correlation)


def test_odd_shapes_and_evaluation_mode():
    x = torch.randn(3, 5, 7)
    assert HalfDropout().train()(x).shape == x.shape  # 105 elements: a part of the last byte unused
    assert torch.equal(HalfDropout().eval()(x), x)
    assert any(isinstance(layer, HalfDropout) for layer in cnn((1, 8, 8), 3))


def test_vmapped_fits_draw_other_masks():
    torch.manual_seed(0)
    masks = vmap(HalfDropout().train(), randomness="different")(torch.ones(3, 512))
    assert not torch.equal(masks[0], masks[1]) and not torch.equal(masks[1], masks[2])
