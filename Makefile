# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXTRAS := llm,usd,mjcf,rl,ray,diffusion,dev

.PHONY: demo test test-fast test-slow lint install clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch is pinned: an unpinned torch pulls a multi-GB CUDA build.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q "torch==2.13.0"
	$(BIN)/pip install -q -e ".[$(EXTRAS)]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/scenegen generate "put the banana in the bowl" -n 8 -o out/demo
	@echo "contact sheet: out/demo/contact_sheet.png"

# `make test` (CI) runs both halves: the fast path first, then the tests marked slow.
test: test-fast test-slow

test-fast: lint
	$(BIN)/python -m pytest -q -x -m "not slow"

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -x -m slow

lint: $(STAMP)
	$(BIN)/ruff check scenegen qa rl tests benchmarks
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) out .pytest_cache
