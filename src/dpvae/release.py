"""What a release (`dpvae synth`) contains: `RELEASED`, the one list the docs quote and the tests use.

`x` is `--out` without its suffix (x.csv or x.npz). Nothing else is written beside it: the prepared data, the run,
its checkpoints, records and logs stay in the private workspace (`--work`, by default `default_workspace`: in the
user's own state folder, outside the folder the bundle goes to, so that publishing that folder publishes the bundle
alone; mode 0700), which is deleted once the bundle is in place unless `--keep-work` asks to keep it, all but the
data holder's quality report (`REPORT`, unless `--no-report`): it holds statistics of the private data, so it stays
there, never beside `--out`.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

#: the data holder's quality report (`dpvae.quality_report`): statistics of the private data, in the workspace only
REPORT = "report.html"

#: the release bundle: the samples, their ledger (`privacy.json`) and, with --audit, the canary audit
RELEASED = ("x.csv or x.npz", "x.privacy.json", "x.audit.json")


def bundle(out: Path) -> tuple[Path, Path, Path]:
    """The bundle's files for `--out` (samples, ledger, audit), in `RELEASED`'s order."""
    return out, out.with_name(f"{out.stem}.privacy.json"), out.with_name(f"{out.stem}.audit.json")


def default_workspace(out: Path) -> Path:
    """The private workspace of a release to `out` when `--work` is not given: `<state>/dpvae/synth/<out's name>-<16
    hex of its absolute path>`, where `<state>` is `$XDG_STATE_HOME` (absolute) or `~/.local/state` (the XDG base
    directory for a user's private application state): the same for every run to `out`, so that a killed
    `--seed-file` release resumes and `dpvae ledger` finds a kept run."""
    configured = os.environ.get("XDG_STATE_HOME", "")
    state = Path(configured) if os.path.isabs(configured) else Path.home() / ".local" / "state"
    where = hashlib.sha256(str(Path(out).resolve()).encode()).hexdigest()[:16]
    return state / "dpvae" / "synth" / f"{Path(out).name}-{where}"
