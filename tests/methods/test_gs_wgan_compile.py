"""GS-WGAN's main phase through torch.compile (`compile` parameter): the released generator is the eager run's
to float rounding and the ledger is the eager run's."""

from __future__ import annotations

from pathlib import Path

from dpvae import stages
from support.compiled_runs import gswgan_generator, tiny_gswgan_spec, worst

#: generator parameters (its EMA): |compiled - eager| <= RTOL * max|eager|, tensor by tensor. Four iterations
#: of WGAN-GP, sanitised generator steps and Adam in float32, compiled kernels fusing and reordering sums: too
#: long for a useful rounding bound, so measured (benchmarks/compile_spread.py, this 2-core x86_64 CPU, torch
#: 2.13, benchmarks/measured/cpu-2026-12-01/compile-spread-gswgan.log), run seed / threads: seed 0 1.03e-5 / 1
#: and 5.2e-6 / 2, seed 1 4.0e-7 / 1 and 5.8e-7 / 2, seeds 2 and 3 2.5e-7-3.3e-7 under both (1e-5 failed seed 0,
#: the test's, under 1 thread, as on another machine's CI): 1e-4 keeps a margin of ~10x over the worst. The
#: planted clip 0.5 lies 1.72e-2 away at seed 0 under both thread counts: 172x this tolerance (at seeds 2 and 3
#: the clip barely binds: 1.2e-3-1.4e-3).
RTOL = 1e-4


def test_compiled_main_phase_equals_eager(smoke_config, prepared_from_mirror, tmp_path):
    """Same seeds: the compiled run's generator within RTOL of the eager run's (a run with another clip is not),
    the written ledgers equal."""
    data = prepared_from_mirror("mnist")
    eager, compiled, planted = (
        tiny_gswgan_spec(smoke_config, data, tmp_path, "eager"),
        tiny_gswgan_spec(smoke_config, data, tmp_path, "compiled", compile="default"),
        tiny_gswgan_spec(smoke_config, data, tmp_path, "planted", clip=0.5),
    )
    for spec in (eager, compiled, planted):
        stages.train(spec)
    assert worst(gswgan_generator(eager), gswgan_generator(compiled)) <= RTOL
    assert worst(gswgan_generator(eager), gswgan_generator(planted)) > 100 * RTOL
    written = (Path(eager.run) / "privacy.json").read_text()
    assert (Path(compiled.run) / "privacy.json").read_text() == written
