"""Measured sensitivity: how far the pre-noise aggregate moves when one record is removed or replaced.

Part of the analysis interface (`dpvae.privacy.dpsgd.analysis`): it takes the noiseless sums as a callable
and never reaches an engine itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import torch
from torch import Tensor

PreNoise = Callable[..., Mapping[str, Tensor]]


def _neighbour(batch: Sequence[Tensor], record: int, replacement: Sequence[Tensor] | None) -> list[Tensor]:
    if replacement is None:
        keep = torch.arange(len(batch[0]), device=batch[0].device) != record
        return [t[keep] for t in batch]
    return [
        t.index_copy(0, torch.tensor([record], device=t.device), r.unsqueeze(0)) for t, r in zip(batch, replacement)
    ]


def measured_sensitivity(
    pre_noise: PreNoise, batch: Sequence[Tensor], *, records: Iterable[int], replacement: Sequence[Tensor] | None = None
) -> float:
    """max over `records` k of Σ_terms ‖S_t(batch without/with replaced k) − S_t(batch)‖.

    `pre_noise(*batch)` runs the model and returns a dict of tensors before noise (e.g.
    `dpvae.privacy.dpsgd.analysis.clipped_sums(engine, ...)`); `batch` holds
    per-example tensors with a common leading dimension (data, per-example reparameterisation noise,
    sub-group labels, ...) so that the other records keep their randomness. Without `replacement`
    record k is removed; with it, row k of every batch tensor is replaced by the matching row. The sum
    over terms is Lemma 2's form (the term-wise halves carry separate noise).
    """
    if not batch or any(len(t) != len(batch[0]) for t in batch):
        raise ValueError("batch must be a non-empty sequence of tensors with a common leading dimension")
    if replacement is not None and len(replacement) != len(batch):
        raise ValueError(f"replacement must have one row per batch tensor ({len(batch)}), got {len(replacement)}")
    base = pre_noise(*batch)
    worst = 0.0
    for record in records:
        if not 0 <= record < len(batch[0]):
            raise ValueError(f"records must index the batch (size {len(batch[0])}), got {record}")
        moved = pre_noise(*_neighbour(batch, record, replacement))
        change = sum(float(torch.linalg.vector_norm(moved[name] - base[name])) for name in base)
        worst = max(worst, change)
    return worst
