"""Operator counts of a DP-SGD step from torch.profiler (for `benchmarks/dpsgd_step.py` and the tests).

`ops`: aten operator calls (every level, views included), a device-independent proxy for kernel launches;
`host_reads`: calls of aten operators that read tensor data on the host (`.item()`, `float()`, `bool()`,
`torch.equal`, `nonzero`, `unique`, boolean-mask indexing, ...), each a device synchronisation on an
accelerator; on CUDA also kernel launches, synchronising runtime calls (`cuda_syncs`) and the kernels' time
(`device_ms`: the GPU's busy time, to hold against the step's wall time).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

import torch
from torch.profiler import ProfilerActivity, profile

HOST_READS = frozenset(
    {
        "aten::_local_scalar_dense",
        "aten::item",
        "aten::is_nonzero",
        "aten::equal",
        "aten::nonzero",
        "aten::nonzero_static",
        "aten::unique",
        "aten::_unique",
        "aten::_unique2",
        "aten::unique_consecutive",
        "aten::unique_dim",
        "aten::masked_select",
        "aten::allclose",
        "aten::tolist",
    }
)
CUDA_LAUNCHES = frozenset({"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx"})
CUDA_SYNCS = frozenset(
    {
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventSynchronize",
        "cudaMemcpy",
        "cudaMemcpyAsync",
        "cudaMemcpy2DAsync",
    }
)


def is_host_read(event: object) -> bool:
    """A host read of tensor data, counted once (not inside another) and not a CPU-only check
    (`torch._assert_async` reads its flag on the CPU; on an accelerator it is a kernel)."""
    if event.name not in HOST_READS:
        return False
    parent = event.cpu_parent
    while parent is not None:
        if parent.name in HOST_READS or parent.name.startswith("aten::_assert_async"):
            return False
        parent = parent.cpu_parent
    return True


def host_reads(events: Iterable[object]) -> list[str]:
    """Names of the host reads among profiler events (see `is_host_read`)."""
    return [event.name for event in events if is_host_read(event)]


def calls_per_step(step: Callable[[], None], rounds: int = 1, cuda: bool = False) -> dict[str, float]:
    """Mean calls per step of `step` over `rounds` profiled steps: `ops`, `syncs` (host reads) and, with
    `cuda`, `launches` and `cuda_syncs` (less the profiler's own final synchronisation)."""
    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
        for _ in range(rounds):
            step()
        if cuda:
            torch.cuda.synchronize()
    events = prof.events()
    names = Counter(event.name for event in events)
    counts = {"ops": sum(n for name, n in names.items() if name.startswith("aten::")), "syncs": len(host_reads(events))}
    if cuda:
        counts["launches"] = sum(names[name] for name in CUDA_LAUNCHES)
        counts["cuda_syncs"] = sum(names[name] for name in CUDA_SYNCS) - 1
        # kernel time (ms): against the step's wall time it says whether the step waits on the host
        counts["device_ms"] = (
            sum(e.self_device_time_total for e in events if e.device_type == torch.autograd.DeviceType.CUDA) / 1000
        )
    return {key: value / rounds for key, value in counts.items()}
