"""Which device a job runs on, and the settings that make CUDA repeat itself.

`auto` means CUDA when it is there. On CUDA, `repeatable(device)` asks for deterministic kernels before the
first kernel runs (cuBLAS' fixed workspace, `torch.use_deterministic_algorithms`, no cuDNN autotuning), so
that the same run sampled twice on the same GPU gives the same bytes (the method contract checks it). An op
without a deterministic CUDA kernel warns, naming itself, rather than stopping a long run. The CPU is left
as it is: its kernels already repeat, and its results must not move.
"""

from __future__ import annotations

import os

CUBLAS_WORKSPACE = ":4096:8"   # cuBLAS' documented setting for reproducible results (CUDA >= 10.2)


def resolve_device(wanted: str = "auto") -> str:
    """`auto` → 'cuda' when a GPU is visible, else 'cpu'; anything else as given."""
    if wanted != "auto":
        return wanted
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def repeatable(device: str) -> None:
    """Deterministic kernels on CUDA (call before the job's first CUDA kernel); nothing on the CPU."""
    if not device.startswith("cuda"):
        return
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)
    import torch

    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
