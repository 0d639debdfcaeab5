"""Mean, sd and n over seeds: the one summary of repeated runs that every table, figure and record uses.

One seed has no sd (NaN, never 0): a formatter shows it as "x (n=1)", a plot draws no band.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

SUMMARY_COLUMNS = ("mean", "sd", "n")


def _sd(values: pd.Series) -> float:
    """Sample sd (ddof=1) of the non-missing values; NaN for fewer than two."""
    return float(values.std(ddof=1))


@dataclass(frozen=True)
class SeedStats:
    """mean, sd (ddof=1; NaN for one seed) and n (non-missing values) of one quantity over seeds."""

    mean: float
    sd: float
    n: int

    @classmethod
    def of(cls, values: Iterable[float]) -> SeedStats:
        series = pd.Series(list(values), dtype=float)
        return cls(float(series.mean()), _sd(series), int(series.count()))

    @classmethod
    def of_row(cls, row: pd.Series) -> SeedStats:
        """The stats of one row of a `seed_summary` (or of any frame with mean, sd and n columns)."""
        return cls(float(row["mean"]), float(row["sd"]), int(row["n"]))

    @property
    def shown(self) -> bool:
        """Whether there is a number to show (at least one finite value)."""
        return self.n > 0 and math.isfinite(self.mean)


def seed_summary(frame: pd.DataFrame, by: list[str], value: str = "value", sort: bool = False) -> pd.DataFrame:
    """One row per `by` group of `frame`: the `by` columns, then mean, sd and n of `value` over its rows (seeds)."""
    grouped = frame.groupby(by, sort=sort, dropna=False)[value]
    return grouped.agg(mean="mean", sd=_sd, n="count").reset_index()
