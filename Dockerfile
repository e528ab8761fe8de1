# kafka-wire as a drop-in for mcr.microsoft.com/azure-messaging/eventhubs-emulator:
#   docker build -t kafka-wire:dev .        (or `make image`)
# BASE is any Debian-like image with Python >= 3.11 (python3 -m venv, apt-get): an official
# slim Python image by default; `make image` passes a locally made Debian base where no image
# registry is reachable. What the container reads and prints: docs/container.md.
ARG BASE=python:3.11-slim

FROM ${BASE} AS build
# python-qpid-proton comes as source: compile it (with OpenSSL) here, copy only the virtualenv.
RUN set -eux; apt-get update; \
    pkgs="gcc libc6-dev libssl-dev"; \
    python3 -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(sysconfig.get_paths()["include"] + "/Python.h"))' \
        || pkgs="$pkgs python3-dev"; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $pkgs; \
    rm -rf /var/lib/apt/lists/*; \
    python3 -m venv /opt/kafka-wire
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# Dependencies first (a layer that changes only with setup.cfg), then the code.
COPY setup.cfg pyproject.toml README.md ./
RUN /opt/kafka-wire/bin/python -c 'import configparser; c = configparser.ConfigParser(); c.read("setup.cfg"); \
open("/tmp/requirements.txt", "w").write("\n".join(l for l in c["options"]["install_requires"].splitlines() if l.strip() and not l.lstrip().startswith("#")))' \
    && /opt/kafka-wire/bin/pip install -r /tmp/requirements.txt
COPY kafka_wire ./kafka_wire
COPY log ./log
COPY coordinator ./coordinator
COPY capture ./capture
COPY spark ./spark
RUN /opt/kafka-wire/bin/pip install --no-deps . \
    && find /opt/kafka-wire -name __pycache__ -prune -exec rm -rf {} + \
    && /opt/kafka-wire/bin/python -m compileall -q /opt/kafka-wire/lib

FROM ${BASE}
COPY --from=build /opt/kafka-wire /opt/kafka-wire
# Non-root; /data is the volume that keeps events, checkpoints and management changes.
RUN set -eux; \
    (groupadd --system --gid 10001 kafkawire && useradd --system --uid 10001 --gid 10001 \
        --home-dir /data --no-create-home --shell /usr/sbin/nologin kafkawire); \
    mkdir -p /data /Eventhubs_Emulator/ConfigFiles /kafka-wire; \
    chown kafkawire:kafkawire /data
ENV PATH=/opt/kafka-wire/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \
    KAFKA_WIRE_DATA_DIR=/data
USER 10001:10001
WORKDIR /data
VOLUME /data
# AMQP, AMQPS, Kafka (SASL_PLAINTEXT), Kafka (SASL_SSL), health + management/REST API + console
# over HTTP, the same over HTTPS.
EXPOSE 5672 5671 9092 9093 5300 5443
HEALTHCHECK --interval=5s --timeout=3s --start-period=5s --retries=3 \
    CMD ["python", "-c", "import os, sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('HEALTH_PORT', '5300') + '/health', timeout=2).status != 200)"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["python", "-m", "kafka_wire.container"]
