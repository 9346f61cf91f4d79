# One command each: `make demo` sets up and runs the main job on the bundled near-miss; `make test` sets up
# and runs the test suite (two pytest workers, one test file each at a time: the suite is mostly sandboxed
# evaluations, CPU-bound, and a file keeps its warm worker pool). Both create .venv on first use with the
# pinned CPU torch/triton (constraints.txt).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint sandbox-deps system-deps

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	touch $@

demo: sandbox-deps setup
	$(BIN)/kmedic check examples/softmax_tail --tier light || [ $$? -eq 1 ]
	$(BIN)/kmedic repair examples/softmax_tail --strategy offline --out out/softmax_tail

test: system-deps setup
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations=25

# Debian packages (installed when missing; needs root). bubblewrap is the sandbox every candidate runs in:
# without it kmedic refuses to run candidates unless KMEDIC_SANDBOX=weak. Headless Chromium is only for the
# HTML report test.
sandbox-deps:
	command -v bwrap >/dev/null || (apt-get update -qq && apt-get install -y -qq bubblewrap)

system-deps: sandbox-deps
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
		(apt-get update -qq && apt-get install -y -qq chromium chromium-driver)

lint: setup
	$(BIN)/ruff check .
