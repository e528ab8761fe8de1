"""Kafka client settings given on the command line (`--kafka-option KEY=VALUE`,
`--connection-string`), for the commands that talk to a broker as a client."""
from __future__ import annotations


def parse_kafka_options(items: list[str], *, typed: bool = False) -> dict:
    """``["security_protocol=SASL_SSL", ...]`` → a dict of kafka-python settings.
    ``typed``: numbers and true/false become int and bool (kafka-python wants them)."""
    options: dict = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--kafka-option {item!r} is invalid: use KEY=VALUE, e.g. "
                             "security_protocol=SASL_SSL")
        options[key.strip()] = _typed(value) if typed else value
    return options


def _typed(value: str):
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    try:
        return int(value)
    except ValueError:
        return value


def connection_string_options(connection_string: str, tls: bool = False) -> dict:
    """kafka-python settings that authenticate with an Event Hubs connection string."""
    return {"security_protocol": "SASL_SSL" if tls else "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN", "sasl_plain_username": "$ConnectionString",
            "sasl_plain_password": connection_string}
