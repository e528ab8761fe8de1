"""The Event Hubs layer: what makes kafka-wire an Event Hubs namespace.

- ``model``: namespaces, event hubs, consumer groups, SAS policies, tiers and quotas.
- ``config_file``: the official emulator's Config.json and kafka-wire's TOML.
- ``connection_string``, ``sas``: connection strings and SAS tokens.
- ``auth``: SASL/PLAIN ``$ConnectionString`` → a :class:`auth.Principal`.
- ``authz``: SAS rights (Send, Listen, Manage) mapped onto Kafka APIs.
- ``strict``, ``report``: tier rules and the compatibility report.
- ``quotas``: throughput units (token buckets on the injected clock).
- ``tls``: the SASL_SSL listener's certificates.
- ``hooks``, ``attach``: the functions the broker installs in ``services.extra``.
"""
