"""Mean, sd and n over seeds: the one summary of repeated runs that every table, figure and record uses.

One seed has no sd (NaN, never 0): a formatter shows it as "x (n=1)", a plot draws no band.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

SUMMARY_COLUMNS = ("mean", "sd", "n")
CONFIDENCE = 0.95  # the two-sided t-interval of a mean over seeds (the scorecard, the claims, the today page)


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

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float]:
        """The `confidence` t-interval of the mean: mean ± t(n-1) sd/sqrt(n); NaN bounds for fewer than two seeds."""
        if self.n < 2 or not math.isfinite(self.sd):
            return math.nan, math.nan
        from scipy import stats

        half = float(stats.t.ppf(0.5 + confidence / 2, self.n - 1)) * self.sd / math.sqrt(self.n)
        return self.mean - half, self.mean + half

    @property
    def shown(self) -> bool:
        """Whether there is a number to show (at least one finite value)."""
        return self.n > 0 and math.isfinite(self.mean)


def seed_summary(frame: pd.DataFrame, by: list[str], value: str = "value", sort: bool = False) -> pd.DataFrame:
    """One row per `by` group of `frame`: the `by` columns, then mean, sd and n of `value` over its rows (seeds)."""
    grouped = frame.groupby(by, sort=sort, dropna=False)[value]
    return grouped.agg(mean="mean", sd=_sd, n="count").reset_index()
