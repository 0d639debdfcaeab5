"""Adding a method touches its own package and the configuration, nothing else (docs/developing.md, "Adding a method").

In a copy of the repository: a toy private method family (`methods/toy/__init__.py`: parameters, the registered
method, its ledger, `recompute_ledger` and `planned_ledger`) and one variant and experiment in config.yaml. The copy's
configuration validates, the import contracts hold (the new family is covered by the independence contract
without naming it) and the method meets the contract test every method meets (it trains in a second).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from dpvae.paths import REPO_ROOT
from support.workflow_runs import copy_repository

TOY = '''"""A toy method family: the clipped training records' mean, released once with Gaussian noise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from dpvae.methods.base import Method, Resources, RunContext
from dpvae.methods.registry import register_method
from dpvae.params import MethodParams, param
from dpvae.privacy.accounting import solve_noise_multiplier
from dpvae.privacy.ledger import Accounting, Ledger, Mechanism, recorded_mechanisms
from dpvae.runspec import RunSpec


@dataclass(frozen=True)
class ToyParams(MethodParams):
    clip: float = param(1.0, "row-norm bound C of a record", exclusive_minimum=0)
    noise_multiplier: float | Literal["auto"] = param("auto", "sigma of the release; auto = calibrated")


def ledger(sigma: float, n: int, clip: float, delta: float, target: float | None) -> Ledger:
    release = Mechanism("toy: mean of clipped records", sigma, 1.0, 1, 2 * clip / n)
    accounting = Accounting((release,), delta, adjacency="replace-one")
    return Ledger(accounting, accounting, target, "one Gaussian release, replace-one sensitivity 2C/n")


def noise(params: ToyParams, epsilon: float, delta: float, n: int) -> float:
    if params.noise_multiplier != "auto":
        return float(params.noise_multiplier)
    return solve_noise_multiplier(lambda s: ledger(s, n, params.clip, delta, None).epsilon, epsilon)


@register_method
class ToyMean(Method):
    name = "toy-mean"
    paper = "privae"
    private = True
    description = "toy: a noisy mean of the clipped training records"
    Params = ToyParams
    RESOURCES = Resources(threads=1, mem_mb=500, runtime=1)

    def train(self, ctx: RunContext) -> Ledger:
        p, x = ctx.params, ctx.data.train.x.reshape(len(ctx.data.train.x), -1).astype(np.float64)
        sigma = noise(p, ctx.epsilon, ctx.delta, len(x))
        clipped = x * np.minimum(1, p.clip / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12))
        mean = clipped.mean(0) + ctx.rng("release").normal(0, sigma * 2 * p.clip / len(x), x.shape[1])
        ctx.model_dir.mkdir(parents=True, exist_ok=True)
        np.save(ctx.model_dir / "mean.npy", mean)
        return ledger(sigma, len(x), p.clip, ctx.delta, ctx.epsilon)

    def recompute_ledger(self, params: ToyParams, spec: RunSpec, recorded: dict) -> Ledger:
        (release,) = recorded_mechanisms(recorded)
        n = round(2 * params.clip / release.sensitivity)
        return ledger(noise(params, spec.epsilon, spec.delta, n), n, params.clip, spec.delta, spec.epsilon)

    def planned_ledger(self, params: ToyParams, spec: RunSpec, facts) -> Ledger:
        n = facts.n_train
        return ledger(noise(params, spec.epsilon, spec.delta, n), n, params.clip, spec.delta, spec.epsilon)

    def sample(self, ctx: RunContext, n: int | None) -> dict[str, np.ndarray]:
        train, count = ctx.data.train, len(ctx.data.train.y) if n is None else int(n)
        mean = np.load(ctx.model_dir / "mean.npy")
        rng = ctx.rng("sample")
        x = (mean + rng.normal(0, 0.1, (count, mean.size))).reshape(count, *train.x.shape[1:])
        return {"x": x.astype(np.float32), "y": rng.choice(train.y, count).astype(np.int64)}
'''
VARIANT = {"toy": {"method": "toy-mean", "params": {"clip": 2.0}}}
EXPERIMENT = {
    "toy_check": {
        "paper": "privae",
        "description": "the toy method of tests/methods/test_new_method.py",
        "datasets": ["pinwheel"],
        "variants": ["toy"],
        "epsilons": [1],
        "seeds": 1,
    }
}


def _run(command: list[str], copy: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{copy / 'src'}:{copy / 'tests'}"}
    return subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, timeout=600)


def test_a_new_method_family_is_its_package_plus_config(tmp_path):
    copy = copy_repository(tmp_path)
    shutil.copytree(
        REPO_ROOT / "tests", copy / "tests", dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
    )
    (copy / "src" / "dpvae" / "methods" / "toy").mkdir()
    (copy / "src" / "dpvae" / "methods" / "toy" / "__init__.py").write_text(TOY)
    config = yaml.safe_load((copy / "config.yaml").read_text())
    config["variants"].update(VARIANT)
    config["experiments"].update(EXPERIMENT)
    (copy / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    checked = _run([sys.executable, "-m", "dpvae", "check-config", "config.yaml", "tests/config/smoke.yaml"], copy)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    lint = Path(sys.executable).with_name("lint-imports")
    contracts = _run([str(lint) if lint.exists() else "lint-imports"], copy)
    assert contracts.returncode == 0 and "0 broken" in contracts.stdout, contracts.stdout[-2000:]
    contract = _run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-k",
            "cpu-toy-mean",
            "tests/methods/test_contract.py",
        ],
        copy,
    )
    assert contract.returncode == 0 and "1 passed" in contract.stdout, contract.stdout[-3000:] + contract.stderr[-2000:]
