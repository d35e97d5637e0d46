# Every target installs what it needs into .venv first (CPU torch wheel).
VENV   := .venv
PY     := $(VENV)/bin/python
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PYTHON ?= python3
# tcmalloc, where installed, avoids torch's page-fault slowdown on fresh memory (10x on some VMs)
TCMALLOC := $(wildcard /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4)
RUN    := HF_HUB_OFFLINE=1 $(if $(TCMALLOC),LD_PRELOAD=$(TCMALLOC))
DEMO   := build/demo

.PHONY: install demo test test-slow bench tasks site leaderboard clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# The first run: the suite, one hallucination traced with SAT, a small evaluation, the site with it.
demo: install
	$(RUN) $(BIN)/halbench tasks list
	$(RUN) $(BIN)/halbench tasks show natural -n 1 --model natural-gpt2-a
	$(RUN) $(PY) scripts/demo_trace.py --out $(DEMO)/trace.html
	$(RUN) $(BIN)/halbench eval --method sat --method occlusion --method random --task natural/natural-gpt2-a \
		--budget 64 --limit 12 --no-progress --out $(DEMO)/root/results
	$(RUN) $(BIN)/halbench site build --root $(DEMO)/root --tasks tasks --out $(DEMO)/site

test: install
	$(BIN)/ruff check halbench tests scripts benchmarks
	$(BIN)/ruff format --check halbench tests scripts benchmarks
	$(RUN) $(BIN)/pytest -q -rs

# Tests that train a model, start a Ray cluster or sweep many cases (CI runs them after `make test`).
test-slow: install
	$(RUN) $(BIN)/pytest -q -rs -m slow

# Scorer throughput against the plain transformers forward, sweep wall time local vs Ray, isolation cost,
# SAT search speed against the plain reference.
bench: install
	$(RUN) $(PY) benchmarks/scorer_forward.py
	$(RUN) $(PY) benchmarks/sweep.py
	$(RUN) $(PY) benchmarks/isolation.py
	$(RUN) $(PY) benchmarks/sat_search.py

# Rebuild every model and task instance of the suite (about 2 hours on 2 cores).
tasks: install
	$(RUN) $(BIN)/halbench tasks build --all

site: install
	$(RUN) $(BIN)/halbench site build

# Every built-in method on every instance's test split at 16, 64 and 256 rows (hours: see README).
leaderboard: install
	$(RUN) $(BIN)/halbench eval --all-methods --all --split test --out results --workers 2

clean:
	rm -rf $(VENV) build .cache .pytest_cache .ruff_cache site/_build
