# Everything installs into .venv/ from the package registries; nothing is assumed
# to be on the machine but python3 (>= 3.11) and make.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
BENCH_STAMP := $(VENV)/.installed-bench
JS_STAMP := tests/js/node_modules/.installed

.PHONY: install install-test install-bench run test soak bench clean chromium

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(STAMP): $(PY) setup.cfg pyproject.toml
	PYTHONWARNINGS="ignore:Editable installation" $(PIP) install --quiet -e .
	touch $@

$(TEST_STAMP): $(STAMP)
	PYTHONWARNINGS="ignore:Editable installation" $(PIP) install --quiet -e '.[test]'
	touch $@

$(BENCH_STAMP): $(STAMP)
	PYTHONWARNINGS="ignore:Editable installation" $(PIP) install --quiet -e '.[bench]'
	touch $@

install: $(STAMP)

install-test: $(TEST_STAMP)

install-bench: $(BENCH_STAMP)

run: $(STAMP)
	$(VENV)/bin/kafka-wire serve --data-dir ./data --listen 127.0.0.1:9092 --tls-listen 127.0.0.1:9093

# tests/js/package.json's packages, only where npm exists (else their tests skip and say why):
# kafkajs (tests/groups/test_kafkajs_group.py), @azure/event-hubs (tests/amqp/test_sdk_js.py),
# azurite, Azure Blob storage for the SDK's checkpoint store (tests/amqp/test_checkpoint_store.py).
$(JS_STAMP): tests/js/package.json
	@if command -v npm >/dev/null 2>&1; then \
		{ npm install --prefix tests/js --no-audit --no-fund --loglevel=error && touch $@; } \
		|| echo "npm install in tests/js FAILED: the kafkajs, @azure/event-hubs and azurite tests will be skipped"; \
	else echo "npm not found: the kafkajs, @azure/event-hubs and azurite tests will be skipped"; fi

# Debian's chromium and chromium-driver for tests/console/test_console_browser.py: installed
# with apt-get when missing and running as root (else that test skips and says why).
chromium:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			chromium chromium-driver >/dev/null; } \
		|| echo "apt-get install of chromium FAILED: the console browser test will be skipped"; \
	else echo "chromium not found and not root: the console browser test will be skipped"; fi

test: $(TEST_STAMP) $(JS_STAMP) chromium
	$(PY) -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

# The reliability suite at the issue's full counts (100 kill -9 cycles, 1,000,000
# fuzzed frames, 10 min of load, ...): about 25 minutes. Figures go to
# test-artifacts/reliability-soak.json; PYTEST_ARGS=FILE runs one file, KAFKA_WIRE_SEED=N replays a seed.
soak: $(TEST_STAMP)
	KAFKA_WIRE_SOAK=1 $(PY) -m pytest -q -p no:cacheprovider --timeout=28800 $(or $(PYTEST_ARGS),tests/faults tests/hostile)

# Kafka beside Tansu, then AMQP (the Azure SDK) beside Kafka on one broker.
bench: $(BENCH_STAMP)
	$(PY) -m bench.run $(BENCH_ARGS)
	$(PY) -m bench.amqp $(filter --quick,$(BENCH_ARGS))
	$(PY) -m bench.explorer $(if $(filter --quick,$(BENCH_ARGS)),--events 50000)
	$(PY) -m bench.boundary
	$(PY) -m bench.amqp_limits

clean:
	rm -rf $(VENV) build *.egg-info tests/js/node_modules
