#!/usr/bin/env bash
# The wheels a bare CUDA machine of this workplace needs to run the project (its image has torch, numpy, scipy,
# pandas, scikit-learn, jax, pytest, ...; nothing can be downloaded there): Python 3.12, x86-64. Builds .whl/
# (ignored by git; ~11 MiB) from envs/constraints.txt's versions. Used on the device as
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
# Seen working on one H200 (26 Nov 2026): the `gpu` tests, benchmarks/gpu.sh, and gpu_queue.py (Snakemake 9.27.1
# reading the workflow and planning an entry). Left out: pulp (16 MB; only Snakemake's ILP scheduler imports it,
# the default profile uses the greedy one) and the SLURM executor plugin.
set -euo pipefail
cd "$(dirname "$0")/../.."
PIP=(env -u PIP_FIND_LINKS -u PIP_EXTRA_INDEX_URL -u PIP_INDEX_URL PIP_CONFIG_FILE=/dev/null "${PY:-.venv/bin/python}" -m pip)
PLATFORM=(--python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
          --platform manylinux2014_x86_64)
PACKAGES=(opacus pypdf dp-accounting dm-tree jsonschema jsonschema-specifications referencing rpds-py mbi torch_fidelity
          DataSynthesizer autodp snakemake annotated-types argparse-dataclass conda-inject configargparse connection-pool
          docutils dpath fastjsonschema gitdb gitpython greenlet humanfriendly immutables jupyter-core nbformat
          platformdirs pydantic pydantic-core smart-open smmap snakemake-interface-common
          snakemake-interface-executor-plugins snakemake-interface-logger-plugins snakemake-interface-report-plugins
          snakemake-interface-scheduler-plugins snakemake-interface-storage-plugins sqlalchemy sqlmodel tenacity
          throttler traitlets typing-inspection yte)
mkdir -p .whl
for name in "${PACKAGES[@]}"; do
  pin=$(grep -i -m1 -E "^${name//-/[-_]}==" envs/constraints.txt) || { echo "no pin for $name in envs/constraints.txt" >&2; exit 2; }
  "${PIP[@]}" download -q --no-deps --only-binary=:all: "${PLATFORM[@]}" -d .whl "$pin" 2>/dev/null \
    || "${PIP[@]}" wheel -q --no-deps -w .whl "$pin"      # an sdist only (autodp, connection-pool): built here
done
ls .whl | wc -l
