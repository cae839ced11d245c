# sinkscope — `make run` opens the app, `make test` runs the tests; both install what they need.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU wheel of torch; set TORCH="torch" (or a CUDA build) on a machine with a GPU.
TORCH ?= torch==2.13.0
PORT ?= 8501
ADDRESS ?= 127.0.0.1
# make run ENGINE=http://host:8000 sends every computation to a served engine (make engine).
ENGINE ?=
ENGINE_PORT ?= 8000
REPLICAS ?= 1
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_HUB_DISABLE_PROGRESS_BARS := 1
export NUMBA_THREADING_LAYER := omp
export PYTHONUNBUFFERED := 1

.PHONY: install chromium run engine test test-fast bench fuzz load screenshots gpu-bundle clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[test]"
	$(PY) -m engine warmup
	touch $@

chromium:
	@command -v chromium >/dev/null || { \
	  echo "Installing Debian's chromium for the browser tests…"; \
	  (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || \
	  { echo "Could not install chromium: run 'apt-get install -y chromium' as root."; exit 1; }; }

# The launcher is `streamlit run app.py` that starts loading the model with the server.
run: install
	$(if $(ENGINE),SINKSCOPE_ENGINE=$(ENGINE) )$(PY) -m sinkscope_app.launch \
	  --server.headless true --server.port $(PORT) \
	  --server.address $(ADDRESS) --browser.gatherUsageStats false

# The engine as a service (Ray Serve, local instance, loopback unless ADDRESS says otherwise).
engine: install
	$(PY) -c "import ray.serve" 2>/dev/null || $(PY) -m pip install -q -e ".[serve]"
	$(PY) -m engine serve --host $(ADDRESS) --port $(ENGINE_PORT) --replicas $(REPLICAS)

# Two pytest-xdist workers (whole files each, handed out in tests/conftest.py's order: Ray
# and the longest files first, browser tests last); XDIST= runs everything in one process.
# See docs/testing.md for what each measured.
XDIST ?= -n 2 --dist loadfile --no-loadscope-reorder

test: install chromium
	$(PY) -m pytest -q -p no:cacheprovider $(XDIST)

test-fast: install
	$(PY) -m pytest -q -p no:cacheprovider $(XDIST) -m "not browser and not slow"

bench: install chromium
	$(PY) -m engine.io.bench solver
	$(PY) -m benchmarks.latency
	$(PY) -m benchmarks.coldstart
	$(PY) -m benchmarks.learn
	$(PY) -m benchmarks.models
	$(PY) -m benchmarks.service
	$(PY) -m benchmarks.classroom
	$(PY) -m benchmarks.frontend
	$(PY) -m benchmarks.scrub
	$(PY) -m benchmarks.align
	$(PY) -m benchmarks.lab
	$(PY) -m benchmarks.aligner

fuzz: install
	SINKSCOPE_FUZZ_EXAMPLES=10000 $(PY) -m pytest -q tests/test_sinkhorn.py -k hypothesis
	SINKSCOPE_API_FUZZ_EXAMPLES=300 $(PY) -m tests.test_api_fuzz

load: install chromium
	$(PY) -m tests.load --sessions 20 --seconds 120

screenshots: install chromium
	SINKSCOPE_SCREENSHOTS=docs/screenshots $(PY) -m pytest -q -p no:cacheprovider tests/test_browser.py \
	  tests/test_learn_browser.py tests/test_newcomer_browser.py

# What travels to a machine with a GPU and no network (docs/gpu.md): POT's and scipy's
# wheels for CPython 3.12 and the model's configuration and tokenizer files (no weights).
gpu-bundle: install
	rm -rf .gpu
	$(PY) -m pip download -q POT scipy --only-binary=:all: --python-version 3.12 \
	  --platform manylinux2014_x86_64 --no-deps -d .gpu/wheels
	$(PY) -m benchmarks.gpu --bundle .gpu

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
