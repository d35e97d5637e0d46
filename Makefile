# Every target installs what it needs into .venv first (CPU torch wheel).
VENV   := .venv
PY     := $(VENV)/bin/python
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PYTHON ?= python3

.PHONY: install demo test bench tasks site leaderboard clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/halbench tasks list
	$(BIN)/halbench tasks show natural -n 2
	$(BIN)/halbench tasks show conjunctive -n 1
	$(BIN)/halbench tasks verify --all --sample 16
	$(PY) scripts/independent_check.py --sample 20
	$(BIN)/halbench methods list
	$(BIN)/halbench eval --method sat --method sat_shrunk --task single --limit 40 --out build/demo-results
	$(BIN)/halbench site build

test: install
	$(BIN)/ruff check halbench tests scripts benchmarks
	$(BIN)/ruff format --check halbench tests scripts benchmarks
	HF_HUB_OFFLINE=1 $(BIN)/pytest -q

# SAT search speed against the plain-Python reference (exact equality checked; about 3 minutes),
# and the Scorer's forward throughput against the plain transformers forward.
bench: install
	$(PY) benchmarks/sat_search.py
	$(PY) benchmarks/scorer_forward.py

# Rebuild every task's committed artifacts (about 20 minutes on 2 cores).
tasks: install
	$(BIN)/halbench tasks build --all

# The static leaderboard from results/ and submissions/*/results/ (prints the path of its index).
site: install
	$(BIN)/halbench site build

# Every built-in method on every task's test split at 64, 256 and 1024 rows (long: see README).
leaderboard: install
	$(BIN)/halbench eval --all-methods --all --split test --out results

clean:
	rm -rf $(VENV) build .cache .pytest_cache .ruff_cache site/_build
