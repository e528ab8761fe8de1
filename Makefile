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

.PHONY: install install-test install-bench run test soak bench bench-cost compat clean chromium docker image container-test

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
		{ npm install --prefix tests/js --no-package-lock --no-audit --no-fund --loglevel=error && touch $@; } \
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

# The container image (Dockerfile), a drop-in for the official Event Hubs emulator's:
# `make image` builds kafka-wire:dev on python:3.11-slim, or, where no image registry answers,
# on a Debian bookworm base made here with debootstrap (kept in $(CONTAINER_CACHE)/ and
# imported once). `make docker` installs docker.io and debootstrap as root and starts a daemon
# without a bridge network (containers then run with --network host); where it cannot, the
# container tests (tests/container/) skip and say why. docs/container.md tells the rest.
IMAGE ?= kafka-wire:dev
BASE ?= python:3.11-slim
LOCAL_BASE := kafka-wire-base:bookworm
CONTAINER_CACHE ?= $(HOME)/.cache/kafka-wire
DEBIAN_MIRROR ?= $(shell sed -n 's/^URIs: *//p; s/^deb  *\(\[[^]]*\] *\)\{0,1\}\(http[^ ]*\) .*/\2/p' \
	/etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
	| grep -m1 '/debian/*$$' || echo http://deb.debian.org/debian)

docker:
	@if docker info >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" != 0 ]; then echo "no docker daemon and not root: the container tests will be skipped"; \
	else \
		{ command -v dockerd >/dev/null 2>&1 && command -v debootstrap >/dev/null 2>&1; } \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			docker.io debootstrap >/dev/null; } \
		|| echo "apt-get install of docker.io FAILED: the container tests will be skipped"; \
		if command -v dockerd >/dev/null 2>&1; then \
			mkdir -p $(CONTAINER_CACHE); \
			nohup dockerd --bridge=none --iptables=false --ip-forward=false \
				>$(CONTAINER_CACHE)/dockerd.log 2>&1 & \
			for i in $$(seq 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done; \
			docker info >/dev/null 2>&1 || echo "dockerd did not start (see $(CONTAINER_CACHE)/dockerd.log): the container tests will be skipped"; \
		fi; \
	fi

# BASE when the daemon has it or can pull it, else the local Debian base (made once, cached).
image: docker
	@base=$(BASE); \
	if ! docker image inspect $$base >/dev/null 2>&1 && ! docker pull -q $$base >/dev/null 2>&1; then \
		base=$(LOCAL_BASE); \
		if ! docker image inspect $$base >/dev/null 2>&1; then \
			if [ ! -s $(CONTAINER_CACHE)/base-bookworm.tar ]; then \
				echo "no $(BASE) (no registry): making a Debian bookworm base with debootstrap from $(DEBIAN_MIRROR)"; \
				rm -rf $(CONTAINER_CACHE)/rootfs && mkdir -p $(CONTAINER_CACHE) && \
				debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
					bookworm $(CONTAINER_CACHE)/rootfs $(DEBIAN_MIRROR) >$(CONTAINER_CACHE)/debootstrap.log 2>&1 && \
				cp /etc/ssl/certs/ca-certificates.crt $(CONTAINER_CACHE)/rootfs/etc/ssl/certs/host-ca-bundle.crt && \
				printf '[global]\ncert = /etc/ssl/certs/host-ca-bundle.crt\n' >$(CONTAINER_CACHE)/rootfs/etc/pip.conf && \
				rm -rf $(CONTAINER_CACHE)/rootfs/var/cache/apt/archives/*.deb $(CONTAINER_CACHE)/rootfs/var/lib/apt/lists/* \
					$(CONTAINER_CACHE)/rootfs/usr/share/doc $(CONTAINER_CACHE)/rootfs/usr/share/man \
					$(CONTAINER_CACHE)/rootfs/usr/share/locale && \
				tar -C $(CONTAINER_CACHE)/rootfs -cf $(CONTAINER_CACHE)/base-bookworm.tar.part . && \
				mv $(CONTAINER_CACHE)/base-bookworm.tar.part $(CONTAINER_CACHE)/base-bookworm.tar && \
				rm -rf $(CONTAINER_CACHE)/rootfs \
				|| { echo "debootstrap FAILED (see $(CONTAINER_CACHE)/debootstrap.log)"; exit 1; }; \
			fi; \
			docker import $(CONTAINER_CACHE)/base-bookworm.tar $$base >/dev/null; \
		fi; \
	fi; \
	echo "building $(IMAGE) on $$base"; \
	docker build -q --network host --build-arg BASE=$$base -t $(IMAGE) . >/dev/null && \
	docker image ls $(IMAGE) --format '{{.Repository}}:{{.Tag}} {{.Size}}'

# The container tests alone (`make test` runs them too: they build the image with `make image`).
container-test: $(TEST_STAMP) image
	$(PY) -m pytest -q -p no:cacheprovider tests/container $(PYTEST_ARGS)

test: $(TEST_STAMP) $(JS_STAMP) chromium docker
	$(PY) -m pytest -q -p no:cacheprovider --durations=25 $(PYTEST_ARGS)

# The reliability suite at the issue's full counts (100 kill -9 cycles, 1,000,000
# fuzzed frames, 10 min of load, ...): about 25 minutes. Figures go to
# test-artifacts/reliability-soak.json; PYTEST_ARGS=FILE runs one file, KAFKA_WIRE_SEED=N replays a seed.
soak: $(TEST_STAMP)
	KAFKA_WIRE_SOAK=1 $(PY) -m pytest -q -p no:cacheprovider --timeout=28800 $(or $(PYTEST_ARGS),tests/faults tests/hostile tests/durability tests/soak)

# Kafka beside Tansu, then AMQP (the Azure SDK) beside Kafka on one broker.
bench: $(BENCH_STAMP)
	$(PY) -m bench.run $(BENCH_ARGS)
	$(PY) -m bench.amqp $(filter --quick,$(BENCH_ARGS))
	$(PY) -m bench.amqp --spread 0.5 --repeat 1 $(filter --quick,$(BENCH_ARGS))
	$(PY) -m bench.amqp --receivers 2 --repeat 1 $(filter --quick,$(BENCH_ARGS))
	$(PY) -m bench.small_requests $(if $(filter --quick,$(BENCH_ARGS)),--requests 5000 --java 20000)
	$(PY) -m bench.rest_send $(if $(filter --quick,$(BENCH_ARGS)),--requests 1000)
	$(PY) -m bench.explorer $(if $(filter --quick,$(BENCH_ARGS)),--events 50000)
	$(PY) -m bench.boundary
	$(PY) -m bench.amqp_limits
	$(PY) -m bench.durability $(filter --quick,$(BENCH_ARGS))
	$(PY) -m bench.partitions $(filter --quick,$(BENCH_ARGS))
	$(PY) -m bench.small_events $(filter --quick,$(BENCH_ARGS))

# Issue 30's table (cost per event and per request) in one run, row after row, each
# figure beside its peer or limit: about 13 minutes on 2 cores, nothing else running.
bench-cost: $(BENCH_STAMP)
	$(PY) -m bench.run --repeat 3
	$(PY) -m bench.small_requests --repeat 3
	$(PY) -m bench.small_events --repeat 3
	$(PY) -m bench.partitions
	$(PY) -m bench.rest_send
	$(PY) -m bench.amqp
	$(PY) -m bench.amqp --spread 0.5
	$(PY) -m bench.amqp --receive-only --repeat 3 --events 100000
	$(PY) -m bench.amqp --send-only --repeat 3
	$(PY) -m bench.amqp --send-only --repeat 3 --spread 0.5

# Each client SDK's tests against its oldest supported and its newest release, in
# throwaway virtualenvs and npm prefixes under .venv-compat/ (docs/compat.md); not part of
# make test. COMPAT_ARGS: --only NAME, --fresh, --list.
compat: $(PY)
	$(PY) -m compat.run $(COMPAT_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info tests/js/node_modules
