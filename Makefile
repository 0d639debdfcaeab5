# One-command set-up and the project's two entry points (see README.md).
#   make smoke   the whole workflow at smoke scale (offline with ../shared/data as the mirror); Snakemake's
#                other settings come from the default profile, profiles/default, which it finds by itself
#   make test    the test suite (unit, property, data, workflow, dry runs, lint: ruff, snakefmt, import contracts)
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
MIRROR ?= $(firstword $(wildcard ../shared/data))
CORES ?= 2
# pip on these machines also sees a local CPU-only torch wheel (find-links) whose torchvision does not
# exist; ignore machine pip config so torch and torchvision resolve from the same registry release.
# The requirements go in through uv (pinned below), which reads no pip configuration (and, with --no-config, none of
# its own) and fetches the registry's wheels in parallel; the same 143 packages at the same versions as pip (`pip
# freeze` of both environments compared, 2 Dec 2026). --compile-bytecode writes every module's .pyc, as pip does:
# these machines set PYTHONDONTWRITEBYTECODE=1, so a module without one is compiled again in every process (without
# them the suite's workflow process had run 30 % of its tests after 22 min, where it ends after 21).
NOPIPCONF := env -u PIP_FIND_LINKS -u PIP_EXTRA_INDEX_URL -u PIP_INDEX_URL PIP_CONFIG_FILE=/dev/null
PIP := $(NOPIPCONF) $(VENV)/bin/pip
UV := $(NOPIPCONF) $(VENV)/bin/uv

# A virtual environment belongs to the directory it was made at (pyvenv.cfg): its scripts start with the python
# at that path, and an editable install made with an absolute path runs that checkout's src/ (`make setup`
# writes it relative to site-packages, so a copy with its .venv imports its own src/). One made for another
# directory (a copied or moved checkout) is refused with one line, except by clean-env.
MADE_AT := $(lastword $(shell sed -n 's/^command = //p' $(VENV)/pyvenv.cfg 2>/dev/null))
EDITABLE := $(firstword $(wildcard $(VENV)/lib/python*/site-packages/__editable__.dpvae-*.pth))
RUNS := $(filter-out import,$(firstword $(if $(EDITABLE),$(shell cat $(EDITABLE)))))
RUNS_SRC := $(if $(filter /%,$(RUNS)),$(RUNS),$(dir $(EDITABLE))$(RUNS))
ifeq ($(filter clean-env,$(MAKECMDGOALS)),)
ifneq ($(MADE_AT),)
ifneq ($(realpath $(MADE_AT)),$(realpath $(VENV)))
$(error $(VENV) was made at $(MADE_AT), not here: run `make clean-env && make setup`)
endif
endif
ifneq ($(RUNS),)
ifneq ($(realpath $(RUNS_SRC)),$(realpath src))
$(error $(VENV) runs the dpvae of $(RUNS_SRC), not of this checkout: run `make clean-env && make setup`)
endif
endif
endif

.PHONY: setup smoke test lint clean-env
setup: $(VENV)/.installed

$(VENV)/.installed: envs/requirements.txt envs/constraints.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip==25.3 uv==0.9.13
	$(UV) pip install --quiet --no-config --compile-bytecode --python $(PY) -r envs/requirements.txt -c envs/constraints.txt
	$(PIP) install --quiet --no-deps --no-build-isolation -e .
	$(PY) -c 'import glob, os, sysconfig; site = sysconfig.get_paths()["purelib"]; \
	  [open(p, "w").write(os.path.relpath("src", site) + "\n") for p in glob.glob(site + "/__editable__.dpvae-*.pth")]'
	$(PY) -c "import torch, torchvision.ops, torch_fidelity, opacus, dpvae; print('torch', torch.__version__, 'torchvision', torchvision.__version__)"
	touch $@

smoke: setup
	DPVAE_DATA_MIRROR=$(abspath $(MIRROR)) $(VENV)/bin/snakemake --cores $(CORES) --max-threads 1 --configfile=tests/config/smoke.yaml

test: setup
	DPVAE_DATA_MIRROR=$(abspath $(MIRROR)) PY=$(PY) tests/run.sh

lint: setup
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/snakefmt --check Snakefile workflow/rules
	PYTHONPATH=src $(VENV)/bin/lint-imports
	$(VENV)/bin/snakemake --lint

clean-env:
	rm -rf $(VENV)
