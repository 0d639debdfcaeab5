"""Compiled vs eager: how far apart the released parameters of the compile tests' tiny runs land, per seed.

    OMP_NUM_THREADS=N python benchmarks/compile_spread.py [--device cpu] [--method gs-wgan|dp2vae]
                                                           [--seeds 0,1] [--threads N] [--root DIR]

Trains, per seed, the tiny run of `tests/methods/test_<method>_compile.py` (tests/support/compiled_runs.py,
tests/support/tiny_dp2vae.py) eager, through torch.compile (`compile: default`) and eager with the clip halved
(the tests' planted difference), on the smoke config's MNIST prepared from the mirror, and prints per seed
`compile_spread method=… seed=… threads=… compiled=… planted=…`: the largest |x - eager| / max|eager| over the
released tensors (generator EMA, decoder). The tests' tolerance comes from these numbers (their comments).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from dpvae import stages  # noqa: E402
from dpvae.config import load_config  # noqa: E402
from dpvae.data import fetch_dataset, prepare_dataset  # noqa: E402
from dpvae.devices import device_argument, device_name  # noqa: E402
from dpvae.paths import REPO_ROOT, data_mirror  # noqa: E402
from support.compiled_runs import dp2vae_decoder, gswgan_generator, tiny_gswgan_spec, worst  # noqa: E402
from support.tiny_dp2vae import tiny_dp2vae_spec  # noqa: E402


def _dp2vae_spec(config, data, tmp, name, seed, **params):
    return tiny_dp2vae_spec(config, data, tmp, name, seed=seed, **{"noise_multiplier": 1.0, "lr": 0.001, **params})


METHODS = {"gs-wgan": (tiny_gswgan_spec, gswgan_generator), "dp2vae": (_dp2vae_spec, dp2vae_decoder)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    device_argument(parser)
    parser.add_argument("--method", choices=sorted(METHODS), default="gs-wgan")
    parser.add_argument("--seeds", default="0,1", help="comma-separated run seeds")
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (set OMP_NUM_THREADS alike)")
    parser.add_argument("--root", type=Path, default=None, help="where to prepare MNIST (default: a temporary dir)")
    args = parser.parse_args()
    if args.device != "cpu":
        parser.error("the compile tests run on the CPU; --device cuda is not measured here")
    torch.set_num_threads(args.threads)
    print(f"device={device_name(args.device)} torch={torch.__version__} threads={torch.get_num_threads()}", flush=True)
    config = load_config([REPO_ROOT / "config.yaml", REPO_ROOT / "tests" / "config" / "smoke.yaml"])
    make, released = METHODS[args.method]
    with tempfile.TemporaryDirectory() as tmp_dir:
        root = args.root or Path(tmp_dir) / "data"
        fetch_dataset("mnist", root, data_mirror(None))
        data = prepare_dataset("mnist", root, seed=0)
        for seed in map(int, args.seeds.split(",")):
            tmp = Path(tmp_dir) / f"seed{seed}"
            eager, compiled, planted = (
                make(config, data, tmp, "eager", seed),
                make(config, data, tmp, "compiled", seed, compile="default"),
                make(config, data, tmp, "planted", seed, clip=0.5),
            )
            for spec in (eager, compiled, planted):
                stages.train(spec)
            base = released(eager)
            print(
                f"compile_spread method={args.method} seed={seed} threads={torch.get_num_threads()} "
                f"compiled={worst(base, released(compiled)):.3e} planted={worst(base, released(planted)):.3e}",
                flush=True,
            )


if __name__ == "__main__":
    main()
