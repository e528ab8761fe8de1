# Everything installs into .venv/ from the package registries; nothing is assumed
# to be on the machine but python3 (>= 3.11) and make.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
BENCH_STAMP := $(VENV)/.installed-bench

.PHONY: install install-test install-bench run test bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(STAMP): $(PY) setup.cfg pyproject.toml
	$(PIP) install --quiet -e .
	touch $@

$(TEST_STAMP): $(STAMP)
	$(PIP) install --quiet -e '.[test]'
	touch $@

$(BENCH_STAMP): $(STAMP)
	$(PIP) install --quiet -e '.[bench]'
	touch $@

install: $(STAMP)

install-test: $(TEST_STAMP)

install-bench: $(BENCH_STAMP)

run: $(STAMP)
	$(VENV)/bin/kafka-wire serve --data-dir ./data --listen 127.0.0.1:9092

test: $(TEST_STAMP)
	$(PY) -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

bench: $(BENCH_STAMP)
	$(PY) -m bench.run $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
