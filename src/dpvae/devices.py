"""Which device a job runs on, and the settings that make CUDA repeat itself.

`auto` means CUDA when it is there. On CUDA, `repeatable(device)` asks for deterministic kernels before the
first kernel runs (cuBLAS' fixed workspace, `torch.use_deterministic_algorithms`, no cuDNN autotuning), so
that the same run sampled twice on the same GPU gives the same bytes (the method contract checks it). An op
without a deterministic CUDA kernel warns, naming itself, rather than stopping a long run. The CPU is left
as it is: its kernels already repeat, and its results must not move.
"""

from __future__ import annotations

import argparse
import os
import platform

CUBLAS_WORKSPACE = ":4096:8"  # cuBLAS' documented setting for reproducible results (CUDA >= 10.2)


def resolve_device(wanted: str = "auto") -> str:
    """`auto` → 'cuda' when a GPU is visible, else 'cpu'; anything else as given."""
    if wanted != "auto":
        return wanted
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def repeatable(device: str, on: bool = True) -> None:
    """Deterministic kernels on CUDA (call before the job's first CUDA kernel); nothing on the CPU. `on=False` puts
    the default kernels back (a benchmark's comparison; jobs never do)."""
    if not device.startswith("cuda"):
        return
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)
    import torch

    torch.use_deterministic_algorithms(on, warn_only=True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = on


def device_name(device: str) -> str:
    """A readable name of the device that ran a job (GPU model, or the CPU and its core count)."""
    if device.startswith("cuda"):
        import torch

        return f"cuda: {torch.cuda.get_device_name(torch.device(device))}"
    return f"cpu: {platform.processor() or platform.machine()} x{os.cpu_count()}"


def synchronize(device: str) -> None:
    """Wait for the device's queued work (a no-op on the CPU): call before reading a clock."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize(torch.device(device))


def device_argument(parser: argparse.ArgumentParser) -> None:
    """The benchmarks' `--device {cpu,cuda}` (default cpu: the CPU numbers are the reference)."""
    parser.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help="where the tensors live; every result line is preceded by `device=<name>`",
    )
