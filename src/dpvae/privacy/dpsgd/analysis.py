"""Analysis interface: an engine's clipped sums *before noise*, for tests and sensitivity analyses only.

Training holds an engine and calls `step`, which adds the noise before anything leaves it. The noiseless
sums are reachable only through these functions, which take the engine from outside; no training path
may import this module (a test walks the source tree to check it). Each function runs the engine's own
clipping machinery on one forward pass, exactly as `step` would, and returns flattened tensors over the
private parameters.
"""

from __future__ import annotations

import torch
from torch import Tensor

from dpvae.privacy.dpsgd.engine import _Engine
from dpvae.privacy.dpsgd.layers import trainable_params
from dpvae.privacy.dpsgd.sensitivity import measured_sensitivity

__all__ = ["clipped_sums", "measured_sensitivity", "released_sum"]


def _flat(engine: _Engine, grads: dict) -> Tensor:
    """The private parameters' entries of `grads`, in model order, as one vector."""
    private = {id(p) for layer in engine._private_layers for p in trainable_params(layer)}
    params = [p for p in engine._model.parameters() if id(p) in private]
    return torch.cat([grads[p].flatten() for p in params]).detach()


def clipped_sums(engine: object, *inputs: Tensor) -> dict[str, Tensor]:
    """Each term's clipped sum Σ_u clip(g_u) before noise and weighting, by term name.

    `inputs` are what the engine's `step` takes (e.g. per-example losses). For `OpacusDPSGD` (the
    reference implementation) its own clipped sum over all trainable parameters.
    """
    from dpvae.privacy.dpsgd.opacus_reference import OpacusDPSGD

    if isinstance(engine, OpacusDPSGD):
        return engine._clipped_sum(*inputs)
    if not isinstance(engine, _Engine):
        raise TypeError(f"engine must be a DP-SGD engine, got {type(engine).__name__}")
    terms = engine._terms(*inputs)
    one_hot = [[float(i == j) for j in range(len(terms))] for i in range(len(terms))]
    results = engine._aggregate(terms, one_hot, include_public=False)
    return {t.name: _flat(engine, r) for t, r in zip(terms, results)}


def released_sum(engine: _Engine, *inputs: Tensor) -> Tensor:
    """The gradient `step` would release before its noise: Σ_t w_t Σ_u clip(g^t_u) over the private
    parameters (the statistic the sound ledger's sensitivity bounds)."""
    if not isinstance(engine, _Engine):
        raise TypeError(f"engine must be a DP-SGD engine, got {type(engine).__name__}")
    terms = engine._terms(*inputs)
    (grads,) = engine._aggregate(terms, [[t.scale for t in terms]], include_public=False)
    return _flat(engine, grads)
