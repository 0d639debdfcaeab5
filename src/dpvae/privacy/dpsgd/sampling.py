"""Vectorised batch sampling for DP-SGD: Poisson subsampling and random sub-group labels."""

from __future__ import annotations

import torch
from torch import Tensor


def poisson_sample(num_records: int, sample_rate: float, generator: torch.Generator | None = None) -> Tensor:
    """Indices of a Poisson subsample: each record is included independently with probability `sample_rate`.

    This is the sampling the subsampled-Gaussian accountant assumes (docs/papers.md A-P6); the batch size is
    random with mean `sample_rate * num_records` and may be 0.
    """
    if num_records < 0:
        raise ValueError(f"num_records must be >= 0, got {num_records}")
    if not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate}")
    keep = torch.rand(num_records, generator=generator) < sample_rate
    return keep.nonzero().squeeze(1)


def random_groups(
    batch_size: int,
    num_groups: int,
    generator: torch.Generator | None = None,
    *,
    device: torch.device | str | None = None,
) -> Tensor:
    """The sub-group of each of `batch_size` examples: independent uniform labels in 0..num_groups-1, drawn
    on `device` (that of `generator`, if given; default the CPU).

    Independent labels (sizes ~ multinomial, mean batch_size/num_groups) rather than a balanced partition
    (docs/papers.md A-P5 reads Algorithm 1 as "a random partition into b equal groups"): adding or removing a
    record then changes no other record's sub-group, which is what bounds the batch-wise term's
    sensitivity (a balanced partition re-deals every group when the batch size changes by one).
    """
    if batch_size < 0:
        raise ValueError(f"batch_size must be >= 0, got {batch_size}")
    if num_groups < 1:
        raise ValueError(f"num_groups must be >= 1, got {num_groups}")
    if device is None and generator is not None:
        device = generator.device
    return torch.randint(num_groups, (batch_size,), generator=generator, device=device)
