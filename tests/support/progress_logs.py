"""A checker for job logs: every number a log prints is in a whole progress line or a known public line.

A loss, a metric value or a count of private records printed during a private run would be a statistic of its data
that no mechanism released (a loss trace); such a line holds a number outside those patterns, so the checker names it.
"""

from __future__ import annotations

import re

from dpvae.progress import LINE

#: the logging prefix of a job's log (`dpvae.cli`: "%(asctime)s %(levelname)s %(name)s: ")
PREFIX = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ [\w.]+: ")
_F = r"\d+(?:\.\d+)?(?:e[+-]?\d+)?"
#: lines with numbers that are public facts of a run (its schedule, sizes the ledger makes public, times)
PUBLIC_LINES = (
    re.compile(r"resumed at step \d+/\d+"),
    re.compile(r"resuming from checkpoint \S+ at step \d+"),
    # P3GM's summary: d (the public domain's width; no record count, issue 62), the step count, σ, wall and CPU times
    re.compile(
        rf"P3GM on \d+ columns: encoding {_F} s \(cpu {_F} s\), pre-training {_F} s \(cpu {_F} s\), \d+ DP-SGD "
        rf"steps \(sigma {_F}\) {_F} s \(cpu {_F} s\)"
    ),
)


def data_numbers(log: str) -> list[str]:
    """The lines of `log` (a job log's text) that print a number outside a progress line or a public line."""
    flagged = []
    for raw in log.splitlines():
        line = PREFIX.sub("", raw).strip()
        if not re.search(r"\d", line) or LINE.fullmatch(line):
            continue
        if not any(pattern.fullmatch(line) for pattern in PUBLIC_LINES):
            flagged.append(raw)
    return flagged
