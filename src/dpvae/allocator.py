"""glibc's malloc told to keep the memory a process frees, so that tensors of the same size reuse it.

By default glibc serves every allocation over its mmap threshold (at most 32 MiB) with a fresh `mmap` and gives it
back with `munmap` when freed. A training or feature step on the CPU allocates tensors larger than that every
step (a CNN's activations at batch 512, Inception's at batch 64: 50-250 MB), so the kernel zeroes and faults those
pages in again each time: measured on this project's 2-core CPU, 150,000 page faults a second and a quarter of the
CPU time in the kernel (benchmarks/README.md, "allocator"). `keep_freed_memory()` turns `mmap` off for the heap
(`M_MMAP_MAX` 0) and never trims its top (`M_TRIM_THRESHOLD`), so freed blocks are reused, as the env variables
`MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=...` would before the process started. It changes where memory comes
from, never a computed byte; the process keeps its peak memory until it exits, which a job does. A C library other
than glibc is left as it is.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1  # glibc's <malloc.h>
M_MMAP_MAX = -4
NEVER_TRIM = 2**31 - 1  # mallopt takes an int: 2 GiB of free heap top before glibc would trim it


def keep_freed_memory() -> bool:
    """Tell glibc's malloc to reuse freed memory rather than unmap and fault it in again; True if it took (glibc),
    False elsewhere. Idempotent; call at the start of a process (the CLI does), before its large allocations."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to tell
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, NEVER_TRIM))


def malloc_argument(parser: argparse.ArgumentParser) -> None:
    """The benchmarks' `--default-malloc`: measure with glibc's defaults rather than as a job runs (the before)."""
    parser.add_argument(
        "--default-malloc", action="store_true", help="leave glibc's malloc as it is (jobs: keep_freed_memory)"
    )


def malloc_setting(default: bool) -> str:
    """Apply a benchmark's `--default-malloc` choice; its name for the printed header."""
    return "default" if default else ("keep-freed" if keep_freed_memory() else "default (not glibc)")
