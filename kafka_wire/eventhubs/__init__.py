"""The Event Hubs layer: what makes kafka-wire an Event Hubs namespace.

- ``model``: namespaces, event hubs, consumer groups, SAS policies, tiers and quotas.
- ``config_file``: the official emulator's Config.json and kafka-wire's TOML.
- ``connection_string``, ``sas``: connection strings and SAS tokens.
- ``auth``: the broker's :class:`auth.Authenticator` (``services.auth``): SASL PLAIN
  ``$ConnectionString`` and OAUTHBEARER → a :class:`auth.Principal` in a namespace.
- ``strict``, ``report``: tier rules and the compatibility report.
- ``quotas``: throughput units (token buckets on the injected clock).
- ``tls``: the SASL_SSL listener's certificates.
- ``policy``: :class:`policy.NamespacePolicy`, one per namespace (``ctx.policy``):
  rights, tier rules and quotas for produce, fetch and administration.
- ``attach``: applies the model to the namespaces the broker runs.
"""
