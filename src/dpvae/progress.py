"""Progress lines of long loops: done/total, rate, elapsed, ETA and, in private training, the ε spent so far.

A loop declares its total work and unit, calls `advance(n)` as it goes, and a line is logged (logger
`dpvae.progress`, INFO: the job's log) at a steady cadence, every `DPVAE_PROGRESS_SECONDS` seconds (default 30;
0: at every `advance`), and when the work is done:

    progress dp-vae training: 840/2000 steps (42%), 12.3 steps/s, elapsed 1m08s, ETA 1m34s, eps paper 0.62 sound 1.5

The line holds the loop's name, counts fixed by its schedule before it runs, times, and ε from the run's
accountant after `done` units (`epsilon(done)`, a ledger: it depends on the noise and the schedule, never on the
data; computed only when a line is written). Never a loss, a metric value or a count of private records: a loss
printed during a private run would be a statistic of its data that no mechanism released. `epsilon_planned`:
the ledger is the run's planned end (where ε part-way is not worth its own accountant call); the line says so.
`newest_lines` reads the newest progress line of each job log under a folder (`python -m dpvae progress`).
"""

from __future__ import annotations

import logging
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

#: seconds between two lines of one loop (the environment's `DPVAE_PROGRESS_SECONDS`, else this)
DEFAULT_SECONDS = 30.0
ENVIRONMENT = "DPVAE_PROGRESS_SECONDS"
LOG = logging.getLogger(__name__)
T = TypeVar("T")

_NUMBER = r"\d+(?:\.\d+)?(?:e[+-]?\d+)?"
_DURATION = r"(?:\d+h\d\dm|\d+m\d\ds|\d+s|\?)"
#: a whole progress line (as `Progress.line` writes it); a test checks that a private run's log has no other numbers
LINE = re.compile(
    rf"progress (?P<name>[^:]+): (?P<done>\d+)/(?P<total>\d+) (?P<unit>[a-z -]+) \((?P<percent>\d+)%\), "
    rf"(?P<rate>{_NUMBER}|\?) [a-z -]+/s, elapsed (?P<elapsed>{_DURATION}), ETA (?P<eta>{_DURATION})"
    rf"(?P<epsilon>, eps paper {_NUMBER}(?: sound {_NUMBER}| \(no sound bound\))(?: target {_NUMBER})?"
    rf"(?: \(planned end\))?)?$"
)


class _Accounting(Protocol):
    epsilon: float


class LedgerLike(Protocol):
    """What a line reads of a ledger (`dpvae.privacy.ledger.Ledger`)."""

    paper: _Accounting
    sound: _Accounting | None
    target_epsilon: float | None


def cadence() -> float:
    """Seconds between lines: `DPVAE_PROGRESS_SECONDS` if set (≥ 0), else `DEFAULT_SECONDS`."""
    value = os.environ.get(ENVIRONMENT, "")
    seconds = float(value) if value.strip() else DEFAULT_SECONDS
    if not seconds >= 0:
        raise ValueError(f"{ENVIRONMENT} must be a number of seconds >= 0, got {value!r}")
    return seconds


def duration(seconds: float) -> str:
    """'42s', '5m07s', '2h05m' (whole seconds); '?' when unknown."""
    if not math.isfinite(seconds) or seconds < 0:
        return "?"
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def epsilon_text(ledger: LedgerLike, planned: bool = False) -> str:
    """'eps paper 0.6255 sound 1.479 target 1' (sound: '(no sound bound)' where the ledger has none)."""
    text = f"eps paper {ledger.paper.epsilon:.4g}"
    text += " (no sound bound)" if ledger.sound is None else f" sound {ledger.sound.epsilon:.4g}"
    if ledger.target_epsilon is not None:
        text += f" target {ledger.target_epsilon:g}"
    return text + (" (planned end)" if planned else "")


@dataclass
class Progress:
    """One loop's reporter: `total` units (`unit`, plural) of `name`; see the module docstring."""

    name: str
    total: int
    unit: str = "steps"
    epsilon: Callable[[int], LedgerLike] | None = None  # the ledger after `done` units (private training)
    epsilon_planned: bool = False  # `epsilon` gives the planned end's ledger, not the one after `done`
    every: float = field(default_factory=cadence)
    clock: Callable[[], float] = time.monotonic
    write: Callable[[str], Any] = LOG.info
    done: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._started = self._last = self.clock()
        self._first = 0

    def start_at(self, done: int) -> None:
        """A resumed loop: `done` units were done before (the rate counts from here)."""
        self.done = self._first = int(done)
        self._started = self._last = self.clock()

    def advance(self, n: int = 1) -> None:
        """`n` more units done: a line when `every` seconds have passed since the last one, and at the end."""
        self.done += n
        now = self.clock()
        if self.done >= self.total or now - self._last >= self.every:
            self._last = now
            self.write(self.line(now))

    def each(self, items: Iterable[T]) -> Iterator[T]:
        """The items, one unit advanced after each (`for epoch in progress.each(range(epochs)):`)."""
        for item in items:
            yield item
            self.advance()

    def line(self, now: float) -> str:
        elapsed = now - self._started
        rate = (self.done - self._first) / elapsed if elapsed > 0 else math.nan
        left = max(self.total - self.done, 0)
        eta = 0.0 if not left else (left / rate if rate > 0 else math.nan)
        percent = 100 * self.done // self.total if self.total else 100
        text = (
            f"progress {self.name}: {self.done}/{self.total} {self.unit} ({percent}%), "
            f"{'?' if math.isnan(rate) else f'{rate:.3g}'} {self.unit}/s, elapsed {duration(elapsed)}, "
            f"ETA {duration(eta)}"
        )
        if self.epsilon is not None:
            text += ", " + epsilon_text(self.epsilon(self.done), self.epsilon_planned)
        return text


@dataclass(frozen=True)
class JobProgress:
    """The newest progress line of one job log."""

    log: Path
    name: str
    done: int
    total: int
    unit: str
    eta: str


def newest_lines(logs: Path) -> list[JobProgress]:
    """Each `*.log` under `logs` that has a progress line: its newest one, logs sorted by path."""
    found = []
    for path in sorted(Path(logs).rglob("*.log")):
        newest = None
        with open(path, errors="replace") as stream:
            for text in stream:
                start = text.find("progress ")
                if start >= 0 and (match := LINE.match(text[start:].rstrip("\n"))):
                    newest = match
        if newest is not None:
            found.append(
                JobProgress(
                    path, newest["name"], int(newest["done"]), int(newest["total"]), newest["unit"], newest["eta"]
                )
            )
    return found
