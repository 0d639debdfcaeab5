"""Wall time of one P3GM training at the paper's MNIST setting (speed target: <= 2 min on 2 CPU cores).

    OMP_NUM_THREADS=2 python benchmarks/p3gm_train.py [--data-root data] [--variant p3gm] [--dataset mnist-p3gm] \\
        [--device cpu]

The setting is config.yaml's (63,000 x 794 record vectors, d' = 30, B = 300, 4 epochs, sigma_s 1.4 raised to
meet epsilon = 1 with the DP centring mean, 3000 decoder pre-training steps, DP-EM T_e = 20). Needs the
prepared dataset under <data-root>/prepared/<dataset> (`python -m dpvae fetch` + `prepare`, or any
snakemake run). Prints one line per phase and the total, e.g. `total_s=...`; the model goes to a temporary
directory that is removed afterwards. P3GM's networks are small MLPs and its methods train on the CPU whatever
the run's device (they declare no GPU); `--device` is passed on as a run's would be, and the line says so.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

from dpvae.config import load_config
from dpvae.devices import device_argument, device_name
from dpvae.methods.registry import get_method
from dpvae.paths import REPO_ROOT, model_path
from dpvae.runs import Run, run_spec
from dpvae.stages import _seed_everything, run_context


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", default="data")
    parser.add_argument("--dataset", default="mnist-p3gm")
    parser.add_argument("--variant", default="p3gm")
    parser.add_argument("--epsilon", default="1")
    device_argument(parser)
    args = parser.parse_args()
    print(f"device={device_name(args.device)} (the method's networks train on: {device_name('cpu')})", flush=True)
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # P3GM logs the time of each phase

    config = load_config([REPO_ROOT / "config.yaml"])
    run = Run(args.dataset, args.variant, args.epsilon, 0)
    with tempfile.TemporaryDirectory() as tmp:
        spec = replace(run_spec(config, run), run=str(Path(tmp) / "run"), data_root=args.data_root, device=args.device)
        ctx = run_context(spec, model_dir=model_path(Path(tmp) / "run"))
        _seed_everything(ctx)
        started = time.perf_counter()
        n, d = ctx.data.train.x.shape
        loaded, cpu_loaded = time.perf_counter(), time.process_time()
        ledger = get_method(spec.method).train(ctx)
        done, cpu_done = time.perf_counter(), time.process_time()
    params = spec.params
    print(
        f"dataset={args.dataset} variant={args.variant} n_train={n} features={d} threads={torch.get_num_threads()} "
        f"batch={params.get('batch_size')} epochs={params.get('epochs')} d'={params.get('pca_components')}"
    )
    print(
        f"load_s={loaded - started:.1f} train_s={done - loaded:.1f} total_s={done - started:.1f} "
        f"train_cpu_s={cpu_done - cpu_loaded:.1f} "
        "(process CPU time, all threads; wall ~ cpu / threads on an idle machine)"
    )
    if ledger is not None:
        sound = f"{ledger.sound.epsilon:.4f}" if ledger.sound else "none"
        print(f"epsilon={ledger.epsilon:.4f} (paper accounting) sound={sound}; {ledger.notes}")


if __name__ == "__main__":
    main()
