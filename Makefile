# One target per workflow; CI calls the same ones (.ci/run -> make test).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
SYSTEM_STAMP := $(VENV)/.system-services
XDIST ?= 2

.PHONY: demo test lint typecheck bench format clean system-deps

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[redis,postgres,bench,dev,k8s,pubsub,otel,s3]'
	touch $(STAMP)

# The chart-rendering test extra is large, so only the test target installs it.
$(TEST_STAMP): $(STAMP)
	$(BIN)/pip install -q -e '.[deploy-test]'
	touch $(TEST_STAMP)

# Installs redis-server and prometheus from Debian when missing and running as root.
system-deps:
	@bash scripts/install-system-deps.sh

demo: $(STAMP)
	$(BIN)/pip install -q -e '.[demo]'
	$(BIN)/sluiceway demo

test: $(TEST_STAMP) system-deps
	$(BIN)/pytest -n $(XDIST) -m "not serial" tests
	$(BIN)/pytest -p no:xdist -m serial tests

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

format: $(STAMP)
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
