"""Comparisons between two code paths (compiled vs eager, vectorised vs loop, one device vs another): how far
apart two results are in units of a tolerance, so that a test can check both that the paths agree and that a
planted real difference lands far outside the same tolerance.

Why a tolerance is what it is, stated beside each test, is one of two kinds:
- a float error bound: a sum of n float terms is exact to n·u relative (Higham, "Accuracy and Stability of
  Numerical Algorithms", §4.2: |error| <= γ_n Σ|x_i|, γ_n ≈ n·u), u = 2^-53 ≈ 1.1e-16 in float64 and
  2^-24 ≈ 6.0e-8 in float32; reordering the sum (another kernel, another thread count) moves it by as much;
- the measured spread over seeds and thread counts (OMP_NUM_THREADS / torch.set_num_threads 1 and 2) with a
  margin, where the computation is too long for a useful bound (training steps amplify rounding).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

#: float64 / float32 unit roundoff
U64, U32 = 2.0**-53, 2.0**-24
#: how far outside a tolerance a planted difference must land: a real bug is not a rounding coincidence
PLANTED_MARGIN = 100.0


def _pairs(a, b):
    if isinstance(a, Mapping):
        assert a.keys() == b.keys()
        return [(torch.as_tensor(a[k]), torch.as_tensor(b[k])) for k in a]
    return [(torch.as_tensor(np.asarray(a) if not torch.is_tensor(a) else a), torch.as_tensor(b))]


def excess(got, expected, rtol: float, atol: float) -> float:
    """max |got - expected| / (atol + rtol·|expected|) elementwise, over tensors (or mappings of them): <= 1
    is `torch.testing.assert_close(got, expected, rtol=rtol, atol=atol)` passing."""
    worst = 0.0
    for g, e in _pairs(got, expected):
        g, e = g.detach().double().cpu(), e.detach().double().cpu()
        worst = max(worst, float(((g - e).abs() / (atol + rtol * e.abs())).max()))
    return worst


def assert_planted_fails(planted, expected, rtol: float, atol: float, margin: float = PLANTED_MARGIN) -> float:
    """The planted result lies more than `margin` tolerances from `expected`; returns how many."""
    far = excess(planted, expected, rtol, atol)
    assert far > margin, f"a planted difference lies only {far:.3g} tolerances away (needs > {margin:g})"
    return far
