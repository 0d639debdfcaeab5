"""How long must LVAE's non-private VAE train before it fits its training data? One JSON line per epoch.

    OMP_NUM_THREADS=1 python benchmarks/lvae_trajectory.py [--data-root data] [--seed 0] [--epochs 60]

The model and optimiser are config.yaml's `lvae-vae` (the paper's conv VAE, d = 16, Adam lr 1e-3, B = 64) on the
prepared `mnist-lvae` set (9,999 MNIST images + the white outlier, binarised; `snakemake data/prepared/mnist-lvae`).
After each epoch, in eval mode and without sampling noise (z = the posterior mean): the mean loss (BCE + KL, nats)
of 500 seeded training images (`train_loss`) and of the first 1,000 MNIST test images (`heldout_loss`), their gap,
the Euclidean distance of the white outlier to its reconstruction (`outlier_rec`) beside the median of the same
distance over the 500 training images (`typical_rec`), and the outlier's own loss. The campaign's epoch budget
(workflow/campaigns/overlays/lvae-cpu-long.yaml) was read off this trajectory (docs/lvae.md). Not a workflow run: its
numbers are evidence for a [choice], not results.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from dpvae.data.store import load_prepared
from dpvae.models.lvae_vae import LVAEConvVAE
from dpvae.paths import prepared_dir

LATENT, LR = 16, 1e-3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", default="data")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=60)
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    data = load_prepared(prepared_dir(Path(args.data_root), "mnist-lvae"))
    x = torch.as_tensor(np.asarray(data.train.x), dtype=torch.float32)
    held_out = torch.as_tensor(np.asarray(data.test.x[:1000]), dtype=torch.float32)
    outlier = int(data.meta["outlier_index"])
    torch.manual_seed(args.seed)
    model = LVAEConvVAE(LATENT)
    optimizer = torch.optim.Adam(model.parameters(), LR)
    generator = torch.Generator().manual_seed(args.seed)
    typical = torch.randperm(len(x) - 1, generator=generator)[:500]
    typical = typical + (typical >= outlier).long()  # any 500 rows but the outlier's

    def evaluate() -> dict[str, float]:
        model.eval()
        with torch.no_grad():

            def loss(a: torch.Tensor) -> torch.Tensor:
                return model.loss(a, torch.zeros(len(a), LATENT))

            def reconstruction_distance(a: torch.Tensor) -> torch.Tensor:
                return (torch.sigmoid(model.decode(model.encode(a)[0])) - a).flatten(1).norm(dim=1)

            train, test = loss(x[typical]).mean().item(), loss(held_out).mean().item()
            row = {
                "train_loss": train,
                "heldout_loss": test,
                "gap": test - train,
                "outlier_rec": reconstruction_distance(x[outlier : outlier + 1]).item(),
                "typical_rec": reconstruction_distance(x[typical]).median().item(),
                "outlier_loss": loss(x[outlier : outlier + 1]).item(),
            }
        model.train()
        return {k: round(v, 2) for k, v in row.items()}

    started = time.monotonic()
    for epoch in range(1, args.epochs + 1):
        order = torch.randperm(len(x), generator=generator)
        for i in range(0, len(x), args.batch_size):
            batch = x[order[i : i + args.batch_size]]
            optimizer.zero_grad()
            model.loss(batch, torch.randn(len(batch), LATENT, generator=generator)).mean().backward()
            optimizer.step()
        print(json.dumps({"epoch": epoch, "s": round(time.monotonic() - started), **evaluate()}), flush=True)


if __name__ == "__main__":
    main()
