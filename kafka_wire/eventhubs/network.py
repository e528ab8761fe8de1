"""IP filter rules: a namespace's network rule set (the service's ``networkRuleSets/default``).

``default_action`` Deny refuses every client address that no rule allows; Allow
admits all (the rules then change nothing, as on the service, whose IP rules
only allow). Rules are IPv4 or IPv6 addresses or CIDR ranges. The listeners ask
:meth:`NetworkRuleSet.refusal` once they know which namespace a connection is
for: Kafka at SASL authentication, AMQP at ``open``, HTTPS sends per request.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field


@dataclass(slots=True)
class NetworkRuleSet:
    default_action: str = "Allow"                    # Allow | Deny
    ip_rules: list[str] = field(default_factory=list)  # allowed addresses / CIDR ranges
    public_network_access: str = "Enabled"           # Enabled | Disabled (Disabled: no one)
    _networks: list = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        action = self.default_action.lower()
        if action not in ("allow", "deny"):
            raise ValueError(f"defaultAction {self.default_action!r} is not Allow or Deny")
        self.default_action = action.capitalize()
        access = self.public_network_access.lower()
        if access not in ("enabled", "disabled", "securedbyperimeter"):
            raise ValueError(f"publicNetworkAccess {self.public_network_access!r} is not Enabled "
                             "or Disabled")
        self.public_network_access = "Disabled" if access == "disabled" else "Enabled"
        try:
            self._networks = [ipaddress.ip_network(r.strip(), strict=False) for r in self.ip_rules]
        except ValueError as exc:
            raise ValueError(f"an IP rule is not an address or CIDR range: {exc}") from None

    def refusal(self, address: str) -> str | None:
        """Why a client at ``address`` is refused, or None when admitted."""
        if self.public_network_access == "Disabled":
            return f"public network access is disabled: {address} is refused"
        if self.default_action == "Allow":
            return None
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return f"client address {address!r} cannot be matched against the IP rules"
        if ip.version == 6 and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if any(ip.version == n.version and ip in n for n in self._networks):
            return None
        return (f"client address {address} is not allowed by the namespace's IP filter rules "
                f"(default action Deny; allowed: {', '.join(self.ip_rules) or 'none'})")

    def to_json(self) -> dict:
        return {"default_action": self.default_action, "ip_rules": list(self.ip_rules),
                "public_network_access": self.public_network_access}

    @classmethod
    def from_json(cls, d: dict) -> NetworkRuleSet:
        return cls(d.get("default_action", "Allow"), list(d.get("ip_rules", [])),
                   d.get("public_network_access", "Enabled"))
