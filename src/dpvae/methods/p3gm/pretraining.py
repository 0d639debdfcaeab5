"""How many steps P3GM's non-private decoder pre-training takes (light: validation and the method's help read it;
`train.py` pre-trains)."""

from __future__ import annotations

import math
from typing import Any

#: the reference code's decoder pre-training steps (A-G7), the most `pretrain_steps: auto` takes
PRETRAIN_STEPS = 3000
#: `pretrain_steps: auto` below that: this many passes' worth of pre-training batches over the N training records
PRETRAIN_PASSES = 100


def pretrain_steps(params: Any, n_train: int) -> int:
    """The decoder's pre-training steps for a run of `n_train` training records (after `max_train`): the
    configured `pretrain_steps`, or `auto`'s rule: min(PRETRAIN_STEPS, ⌈PRETRAIN_PASSES · N / pretrain_batch_size⌉)."""
    if params.pretrain_steps != "auto":
        return params.pretrain_steps
    return min(PRETRAIN_STEPS, math.ceil(PRETRAIN_PASSES * n_train / params.pretrain_batch_size))
