"""Clipping units: which examples of a batch share one clipped gradient.

A unit is one example (standard DP-SGD), a sub-group of examples (term-wise DP-SGD's batch-wise term)
or the whole batch (batch aggregation). Units partition the batch's examples.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor


def require(condition: Tensor, message: str) -> None:
    """Raise ValueError(message) unless the one-element boolean `condition` holds, without waiting for the
    device: at once on the CPU, at the device's next synchronisation elsewhere (`torch._assert_async`)."""
    try:
        torch._assert_async(condition, message)
    except RuntimeError as error:  # raised at once on the CPU
        raise ValueError(message) from error


@dataclass(frozen=True)
class Units:
    """`index[i]` is the unit of example i; there are `count` units (some may be empty).

    `identity` (set by `per_example`) says, without reading the index, that every example is its own unit;
    `valid` that the index is valid by construction. Otherwise it is checked without a host read of it
    (`require`), so building units never waits for the device.
    """

    index: Tensor
    count: int
    identity: bool = field(default=False, repr=False)
    valid: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.index.dim() != 1 or self.index.dtype != torch.long:
            raise ValueError(
                f"index must be a 1-d long tensor, got shape {tuple(self.index.shape)} and dtype {self.index.dtype}"
            )
        if self.count < 0:
            raise ValueError(f"count must be >= 0, got {self.count}")
        if self.identity and (len(self.index) != self.count):
            raise ValueError("identity units need one index entry per unit")
        if len(self.index) and not (self.identity or self.valid):
            require(
                ((self.index >= 0) & (self.index < self.count)).all(), f"index values must lie in [0, {self.count})"
            )

    @classmethod
    def per_example(cls, num_examples: int, device: torch.device | None = None) -> Units:
        """Every example is its own unit."""
        return cls(torch.arange(num_examples, device=device), num_examples, identity=True, valid=True)

    @classmethod
    def whole_batch(cls, num_examples: int, device: torch.device | None = None) -> Units:
        """All examples form one unit."""
        return cls(torch.zeros(num_examples, dtype=torch.long, device=device), 1, valid=True)

    @property
    def num_examples(self) -> int:
        return len(self.index)

    @property
    def is_per_example(self) -> bool:
        """Every example its own unit (known on the host: `identity`, or a single example)."""
        return self.identity or self.count == self.num_examples == 1

    def membership(self, dtype: torch.dtype) -> Tensor:
        """`[U, B]` with 1 where example i belongs to unit u, else 0."""
        units = torch.arange(self.count, device=self.index.device)
        return (units[:, None] == self.index[None]).to(dtype)

    def host_sizes(self) -> list[int] | None:
        """Examples per unit where the index is in host memory (read there, waiting for no device), else None."""
        if self.index.device.type != "cpu":
            return None
        return np.bincount(self.index.numpy(), minlength=self.count).tolist()

    def sum_by_unit(self, per_example: Tensor) -> Tensor:
        """Sum a per-example tensor `[B, ...]` into a per-unit tensor `[U, ...]`."""
        out = per_example.new_zeros((self.count, *per_example.shape[1:]))
        return out.index_add_(0, self.index, per_example)

    def padded(self) -> tuple[Tensor, Tensor]:
        """Examples of each unit as a padded table. Its width, the largest unit size, is read on the host: from
        host memory where the index is there (`host_sizes`), else from the device (a synchronisation; the
        engines do without this table there).

        Returns `members [U, m]` (example indices, padding points at example 0) and `mask [U, m]`
        (True where `members` is a real member); m is the largest unit size.
        """
        sizes = torch.bincount(self.index, minlength=self.count)
        if (known := self.host_sizes()) is not None:
            width = max(known, default=0)
        else:
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
