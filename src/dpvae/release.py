"""What a release (`dpvae synth`) contains: `RELEASED`, the one list the docs quote and the tests use.

`x` is `--out` without its suffix (x.csv or x.npz). Nothing else is written beside it: the prepared data, the run,
its checkpoints, records and logs stay in the private workspace (`<out>.work/`, mode 0700), which is deleted once
the bundle is in place unless `--keep-work` asks to keep it, all but the data holder's quality report (`REPORT`,
unless `--no-report`): it holds statistics of the private data, so it stays there, never beside `--out`.
"""

from __future__ import annotations

from pathlib import Path

#: the data holder's quality report (`dpvae.quality_report`): statistics of the private data, in the workspace only
REPORT = "report.html"

#: the release bundle: the samples, their ledger (`privacy.json`) and, with --audit, the canary audit
RELEASED = ("x.csv or x.npz", "x.privacy.json", "x.audit.json")


def bundle(out: Path) -> tuple[Path, Path, Path]:
    """The bundle's files for `--out` (samples, ledger, audit), in `RELEASED`'s order."""
    return out, out.with_name(f"{out.stem}.privacy.json"), out.with_name(f"{out.stem}.audit.json")
