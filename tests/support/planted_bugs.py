"""Test-only switches that plant a known privacy bug in every DP-SGD engine (for the audit's power tests
and `benchmarks/audit.py --planted`). Each is a context manager patching the engine classes, so that an
engine built inside it — by a test, the engine-level audit or a method's own training loop — has the bug.

* `scaled_noise(0.1)`: every term's noise standard deviation times 0.1, and so the noise of every other
  noisy release made through `canaries.release` (DP-MERF, GS-WGAN, PrivBayes, Ryan's); the ledger still
  claims the calibrated σ;
* `unclipped_layer()`: the last private layer is left out of the clipping norm, so its gradient is scaled
  by a factor computed without it (unclipped when the other layers carry nothing).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from unittest import mock

from dpvae.privacy import canaries
from dpvae.privacy.dpsgd import DPSGD, BatchAggregation, MicroAggregation, TermwiseDPSGD
from dpvae.privacy.dpsgd.engine import _Engine

ENGINE_CLASSES = (DPSGD, TermwiseDPSGD, MicroAggregation, BatchAggregation)


@contextlib.contextmanager
def scaled_noise(factor: float = 0.1) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for cls in ENGINE_CLASSES:
            original = cls._terms

            def terms(self, *args, _original=original, **kwargs):
                return [
                    dataclasses.replace(t, noise_std=factor * t.noise_std) for t in _original(self, *args, **kwargs)
                ]

            stack.enter_context(mock.patch.object(cls, "_terms", terms))
        release = canaries.release

        def scaled_release(clean, std, draw, **kwargs):
            return release(clean, factor * std, draw, **kwargs)

        stack.enter_context(mock.patch.object(canaries, "release", scaled_release))
        yield


@contextlib.contextmanager
def unclipped_layer() -> Iterator[None]:
    original = _Engine._clip_factors

    def clip_factors(self, layers, *args, **kwargs):
        dropped = self._private_layers[-1]
        return original(self, [layer for layer in layers if layer is not dropped], *args, **kwargs)

    with mock.patch.object(_Engine, "_clip_factors", clip_factors):
        yield


PLANTED = {"noise x0.1": scaled_noise, "unclipped layer": unclipped_layer}
