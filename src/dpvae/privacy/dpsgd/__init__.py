"""Vectorised DP-SGD engines (standard, term-wise, micro and batch aggregation, partial-model).

Typical step::

    engine = DPSGD(model, max_grad_norm=1.0, noise_multiplier=1.1, sample_rate=q, expected_batch_size=q * n)
    x = data[poisson_sample(n, q)]
    engine.step(model.loss(x))      # per-example losses [B]; writes .grad
    optimizer.step()

The noiseless clipped sums (tests, sensitivity analyses) are in `dpvae.privacy.dpsgd.analysis`, which this
package does not import: a training loop reaches only `step`.
"""

from dpvae.privacy.dpsgd.engine import DPSGD, BatchAggregation, MicroAggregation, NoiseProfile, TermwiseDPSGD
from dpvae.privacy.dpsgd.layers import conv_transpose2d_grad_sample
from dpvae.privacy.dpsgd.opacus_reference import OpacusDPSGD
from dpvae.privacy.dpsgd.sampling import poisson_sample, random_groups
from dpvae.privacy.dpsgd.units import Units

__all__ = [
    "BatchAggregation",
    "DPSGD",
    "MicroAggregation",
    "NoiseProfile",
    "OpacusDPSGD",
    "TermwiseDPSGD",
    "Units",
    "conv_transpose2d_grad_sample",
    "poisson_sample",
    "random_groups",
]
