"""The project's exceptions: one small hierarchy, each message naming the key, file or value at fault.

The CLI and the Snakefile turn a `DpvaeError` into one or two readable lines and a non-zero exit; anything
else is a bug and keeps its traceback.
"""

from __future__ import annotations


class DpvaeError(Exception):
    """Base of every error a user can cause and fix (bad config, data, target, budget)."""


class ConfigError(DpvaeError, ValueError):
    """The configuration is invalid; the message names every offending key."""


class DataError(DpvaeError, RuntimeError):
    """A raw or prepared file is missing, corrupted, unverifiable or malformed.

    The message always names the offending file (full path or URL) and, for checksum failures, the
    expected and the actual checksum.
    """


class TargetError(DpvaeError, ValueError):
    """A requested item, paper or output does not exist; the message lists the valid ones."""


class NotBuiltError(DpvaeError, RuntimeError):
    """A method, metric, analysis or renderer that an item needs is not implemented yet."""


class PrivacyBudgetExceeded(DpvaeError, RuntimeError):
    """A run's accounted epsilon is above its target: nothing is released."""

    def __init__(self, target_epsilon: float, achieved_epsilon: float, what: str = "run") -> None:
        self.target_epsilon, self.achieved_epsilon = target_epsilon, achieved_epsilon
        super().__init__(
            f"privacy budget exceeded for this {what}: accounted epsilon {achieved_epsilon:.6g} > target "
            f"epsilon {target_epsilon:.6g}; raise the noise or lower the steps"
        )
