"""Clipping units: which examples of a batch share one clipped gradient.

A unit is one example (standard DP-SGD), a sub-group of examples (term-wise DP-SGD's batch-wise term)
or the whole batch (batch aggregation). Units partition the batch's examples.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class Units:
    """`index[i]` is the unit of example i; there are `count` units (some may be empty)."""

    index: Tensor
    count: int

    def __post_init__(self) -> None:
        if self.index.dim() != 1 or self.index.dtype != torch.long:
            raise ValueError(f"index must be a 1-d long tensor, got shape {tuple(self.index.shape)} "
                             f"and dtype {self.index.dtype}")
        if self.count < 0:
            raise ValueError(f"count must be >= 0, got {self.count}")
        if len(self.index) and not (0 <= int(self.index.min()) and int(self.index.max()) < self.count):
            raise ValueError(f"index values must lie in [0, {self.count})")

    @classmethod
    def per_example(cls, num_examples: int, device: torch.device | None = None) -> Units:
        """Every example is its own unit."""
        return cls(torch.arange(num_examples, device=device), num_examples)

    @classmethod
    def whole_batch(cls, num_examples: int, device: torch.device | None = None) -> Units:
        """All examples form one unit."""
        return cls(torch.zeros(num_examples, dtype=torch.long, device=device), 1)

    @property
    def num_examples(self) -> int:
        return len(self.index)

    @property
    def is_per_example(self) -> bool:
        return self.count == self.num_examples and bool(
            torch.equal(self.index, torch.arange(self.count, device=self.index.device)))

    def sum_by_unit(self, per_example: Tensor) -> Tensor:
        """Sum a per-example tensor `[B, ...]` into a per-unit tensor `[U, ...]`."""
        out = per_example.new_zeros((self.count, *per_example.shape[1:]))
        return out.index_add_(0, self.index, per_example)

    def padded(self) -> tuple[Tensor, Tensor]:
        """Examples of each unit as a padded table.

        Returns `members [U, m]` (example indices, padding points at example 0) and `mask [U, m]`
        (True where `members` is a real member); m is the largest unit size.
        """
        sizes = torch.bincount(self.index, minlength=self.count)
        width = int(sizes.max()) if self.count and self.num_examples else 0
        order = torch.argsort(self.index, stable=True)
        sorted_units = self.index[order]
        starts = torch.cumsum(sizes, 0) - sizes
        slot = torch.arange(self.num_examples, device=self.index.device) - starts[sorted_units]
        members = torch.zeros((self.count, width), dtype=torch.long, device=self.index.device)
        mask = torch.zeros((self.count, width), dtype=torch.bool, device=self.index.device)
        members[sorted_units, slot] = order
        mask[sorted_units, slot] = True
        return members, mask


def pad_by_unit(values: Tensor, units: Units) -> tuple[Tensor, Tensor]:
    """Gather per-example `values [B, ...]` into `[U, m, ...]` (zeros where padded) and the `[U, m]` mask."""
    members, mask = units.padded()
    gathered = values[members]
    shape = mask.shape + (1,) * (values.dim() - 1)
    return gathered * mask.reshape(shape).to(values.dtype), mask
