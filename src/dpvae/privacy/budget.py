"""Step budgets: training refuses to run past its target epsilon.

A `StepBudget` turns "the ledger after T steps" into the largest T whose epsilon stays within the target
(epsilon is non-decreasing in T), so a training loop can check every step in O(1). The DP-SGD engines take
one and raise `PrivacyBudgetExceeded` before releasing a step that would overspend.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from dpvae.privacy.ledger import PrivacyBudgetExceeded

EpsilonAfter = Callable[[int], float]


class StepBudget:
    """The steps allowed by `target_epsilon` (no tolerance) for `epsilon_after(steps)`."""

    def __init__(self, epsilon_after: EpsilonAfter, target_epsilon: float, max_search: int = 1 << 40) -> None:
        if not target_epsilon > 0 or not math.isfinite(target_epsilon):
            raise ValueError(f"target_epsilon must be a finite number > 0, got {target_epsilon}")
        self.target_epsilon = float(target_epsilon)
        self._epsilon_after = epsilon_after
        self.max_steps = self._largest_allowed(max_search)

    def _allowed(self, steps: int) -> bool:
        return self._epsilon_after(steps) <= self.target_epsilon

    def _largest_allowed(self, max_search: int) -> int:
        """Largest T with epsilon_after(T) <= target: exponential search, then bisection."""
        if not self._allowed(0):  # the mechanisms spent before training already overspend
            raise PrivacyBudgetExceeded(self.target_epsilon, self._epsilon_after(0))
        low, high = 0, 1
        while self._allowed(high):
            low, high = high, 2 * high
            if high > max_search:
                return max_search
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if self._allowed(middle) else (low, middle)
        return low

    def check(self, steps: int) -> None:
        """Raise PrivacyBudgetExceeded if `steps` steps would spend more than the target."""
        if steps > self.max_steps:
            raise PrivacyBudgetExceeded(self.target_epsilon, self._epsilon_after(steps))
