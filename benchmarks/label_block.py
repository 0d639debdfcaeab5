"""Why an MLP-VAE table release loses its minority label: the decoder's label block, read by arg-max or drawn.

    python benchmarks/label_block.py W/synth-dp-vae-e1-s0.csv.work/run [--n 43957] [--seed 0]

A diagnostic of the run of a kept `synth` workspace (`--keep-work`; P3GM, DP-VAE: `methods/p3gm/store.py`'s models;
two labels), not a release: it decodes n draws of the model's sampling prior, as `store.generate` does, and prints
the label block's mean, spread and range; the quantiles of P(label 1), the block's values clipped at 0 and
normalised; the label-1 share under the release's arg-max and under a draw from that P; each labelling's mean
AUROC of Table VI's four classifiers (`tabular_classifiers`) on the run's real test split (its train.json's
prepared data); and the correlation of P(label 1) with each feature, i.e. how much of the label the decoder ties
to the record.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch


def main() -> None:
    from dpvae.data.store import load_prepared
    from dpvae.eval.tabular_classifiers import classifier_rows
    from dpvae.methods.p3gm.store import load_model, sample_latent
    from dpvae.paths import model_path, prepared_dir, train_record

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="the run folder of a kept synth workspace")
    parser.add_argument("--n", type=int, default=43957)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    model, info = load_model(model_path(args.run))
    spec = json.loads(train_record(args.run).read_text())["spec"]
    prepared = prepared_dir(spec["data_root"], spec["dataset"])
    with torch.no_grad():
        vectors = model.decode(sample_latent(info, args.n, torch.Generator().manual_seed(args.seed))).numpy()
    classes = info["classes"]
    if classes != 2:
        raise SystemExit(
            f"label_block.py: a two-label run is needed (P(label 1) against the rest); {args.run} has {classes}"
        )
    block, features = vectors[:, -classes:], vectors[:, :-classes]
    print("label block mean", block.mean(0).round(3), "sd", block.std(0).round(3))
    print("label block min", block.min(0).round(3), "max", block.max(0).round(3))
    p = np.clip(block, 0, None)
    p = p / np.maximum(p.sum(1, keepdims=True), 1e-12)
    print("P(label 1) quantiles 0/.1/.5/.9/1", np.quantile(p[:, 1], [0, 0.1, 0.5, 0.9, 1]).round(3))
    argmax = block.argmax(1)
    drawn = (np.random.default_rng(args.seed).random(len(p)) < p[:, 1]).astype(np.int64)
    test = load_prepared(prepared).test
    for name, labels in (("arg-max", argmax), ("drawn", drawn)):
        rows = classifier_rows(features, labels, test.x, test.y, args.seed)
        auroc = next(r["value"] for r in rows if r["metric"] == "auroc" and r.get("classifier") == "mean4")
        print(f"{name}: label-1 share {labels.mean():.3f}, AUROC (mean4) {auroc:.4f}")
    spread = features.std(0) > 0
    corr = [np.corrcoef(p[:, 1], features[:, j])[0, 1] if spread[j] else 0.0 for j in range(features.shape[1])]
    print("corr(P(label 1), feature j)", np.round(corr, 2))


if __name__ == "__main__":
    main()
