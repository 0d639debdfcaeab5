"""What a job's time is known from, typed and in one place: declared runtimes, the work a job does, device logs.

* `Declared`: minutes of one job on one device class at one scale, both named with the minutes. Every rule
  declares through Snakemake's `runtime` resource (a method's `Resources.runtime`, a metric's `runtime`, a
  rule's own), which is minutes on the **CPU reference machine** (a 2-core x86_64 CPU) at **paper** scale, the
  scheduler's ceiling (`RUNTIME_RESOURCES`). Nothing declares a GPU time: a GPU's time is measured; nothing
  declares a smaller scale's time: it is measured (`benchmarks/measured/*/*.tsv`, `plan --record`).
* `Work`: what a training job computes in a unit a device log times (`steps` of `kind` at `shape`), so that a
  logged rate prices a job that never ran (a method's `Resources.work`).
* `LoggedRate`: seconds per unit of work on one device, read from the committed device logs
  `benchmarks/measured/<machine>-<date>/*.log`: a `device=<name> ...` line, then one line per case,
  `<kind> key=value ...` (written by `benchmarks/dp2vae_stage1.py`). `LOGGED_KINDS` says which lines time
  which work and how; other lines (engine, GS-WGAN or profiler records) price no job.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path


class DeviceClass(StrEnum):
    CPU_REFERENCE = "cpu-reference"  # a 2-core x86_64 CPU
    GPU = "gpu"  # one H100/H200


PAPER_SCALE = "paper"  # the scale of config.yaml alone


@dataclass(frozen=True)
class Declared:
    """A declared runtime: minutes of one job on `device` at `scale`."""

    minutes: float
    device: DeviceClass
    scale: str


#: Snakemake resource -> the device class and the scale its minutes are for
RUNTIME_RESOURCES: dict[str, tuple[DeviceClass, str]] = {"runtime": (DeviceClass.CPU_REFERENCE, PAPER_SCALE)}


@dataclass(frozen=True)
class Work:
    """`steps` units of `kind` (a `LOGGED_KINDS` key) at `shape` (the log fields the rate depends on)."""

    kind: str
    steps: int
    shape: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class LoggedRate:
    kind: str
    shape: tuple[tuple[str, str], ...]
    seconds_per_step: float
    device: str  # 'cuda: NVIDIA H200'
    source: str  # 'benchmarks/measured/h200-2026-11-26/stage2-after.log:2'


@dataclass(frozen=True)
class LoggedKind:
    """Lines `<line> key=value ...` of a device log time `Work` of `kind`; `shape` names the fields the rate
    depends on, `seconds` computes seconds per step from the line's fields."""

    line: str
    shape: tuple[str, ...]
    seconds: Callable[[dict[str, str]], float]


LOGGED_KINDS: dict[str, LoggedKind] = {
    # DP²-VAE stage 1: K encoders of T_p steps each; a step of one encoder = 1 / (encoders per s · iters)
    "dp2vae.stage1": LoggedKind(
        "stage1", ("width", "batch"), lambda f: 1 / (float(f["vectorised_enc_per_s"]) * int(f["iters"]))
    ),
    # DP²-VAE stage 2: T private steps
    "dp2vae.stage2": LoggedKind("stage2", ("width", "batch"), lambda f: float(f["private_s_per_step"])),
}

_DEVICE = re.compile(r"^#?\s*device=(.+?)(?:\s+\w+=|$)")
_FIELD = re.compile(r"(\w+)=(\S+)")


def read_device_logs(root: Path) -> list[LoggedRate]:
    """Every rate the device logs under `root` (benchmarks/measured) hold, in file and line order."""
    rates = []
    for path in sorted(root.glob("*/*.log")):
        device = ""
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if match := _DEVICE.match(line):
                device = match.group(1)
                continue
            head, _, rest = line.partition(" ")
            fields = dict(_FIELD.findall(rest))
            for kind, logged in LOGGED_KINDS.items():
                if head == logged.line and all(k in fields for k in logged.shape):
                    try:
                        seconds = logged.seconds(fields)
                    except (KeyError, ValueError, ZeroDivisionError):
                        continue
                    shape = tuple((k, fields[k]) for k in logged.shape)
                    rates.append(LoggedRate(kind, shape, seconds, device, f"{path.parent.name}/{path.name}:{number}"))
    return rates


def device_class(device: str) -> str:
    """'cuda', 'cpu2' (a 2-core CPU), 'cpu' or '' (not recorded) for a recorded device name."""
    if device.startswith("cuda"):
        return "cuda"
    if device.startswith("cpu"):
        return "cpu2" if re.search(r"\bx2$", device) else "cpu"
    return ""


def rates_for(work: Work, rates: list[LoggedRate], wanted: str) -> list[LoggedRate]:
    """The logged rates of `work`'s kind and shape on a device of class `wanted` (`device_class`)."""
    return [r for r in rates if r.kind == work.kind and r.shape == work.shape and device_class(r.device) == wanted]


def seconds_of(work: Work, rates: list[LoggedRate]) -> float:
    """`work`'s seconds at the median of `rates` per step."""
    return work.steps * statistics.median(r.seconds_per_step for r in rates)
