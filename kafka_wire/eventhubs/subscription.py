"""The management plane's owner: the credential for what lies above any one
namespace (create, delete and list namespaces), as Azure Resource Manager
needs a subscription's credential for them.

The credential is a bearer token (``Authorization: Bearer <key>``), which any
Azure SDK ``TokenCredential`` can hand out. The operator configures it
(``[server] subscription_key``) or kafka-wire makes one on first start and
keeps it in ``DATA_DIR/subscription.key`` (``kafka-wire token --management``
prints it). It is needed once any namespace requires authentication; while
none does (``make run``'s open namespace) the management plane stays open, as
the namespaces themselves are. It also manages every namespace, as an ARM
owner may.
"""
from __future__ import annotations

import hmac
import logging
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_wire.eventhubs.door import Refusal, Refused
from kafka_wire.log_lines import RepeatedWarnings, client_address

if TYPE_CHECKING:
    from kafka_wire.eventhubs.model import EventHubsModel

__all__ = ["Subscription", "KEY_FILE", "read_key"]

log = logging.getLogger(__name__)

KEY_FILE = "subscription.key"


def read_key(data_dir: Path) -> str | None:
    """The key kept under ``data_dir``, if one was made."""
    try:
        return (Path(data_dir) / KEY_FILE).read_text().strip() or None
    except OSError:
        return None


def _made_key(data_dir: Path | None) -> str:
    """The key kept under ``data_dir``, made (readable by its owner only) when missing."""
    if data_dir is not None:
        found = read_key(data_dir)
        if found:
            return found
    key = secrets.token_urlsafe(32)
    if data_dir is not None:
        path = Path(data_dir) / KEY_FILE
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(key + "\n")
    return key


class Subscription:
    """Who may act above a namespace (see the module docstring)."""

    def __init__(self, model: EventHubsModel, key: str | None = None,
                 data_dir: Path | None = None) -> None:
        self.model = model
        self.configured = key is not None
        self.key = key if key is not None else _made_key(data_dir)
        self._refusals = RepeatedWarnings(log)

    @property
    def required(self) -> bool:
        """A configured key is always needed; a made one once any namespace requires auth."""
        return self.configured or any(ns.requires_auth for ns in self.model.namespaces.values())

    def holds(self, authorization: str) -> bool:
        """Does the header carry the subscription's bearer token?"""
        scheme, _, token = authorization.strip().partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(),
                                                                  self.key.encode())

    def sign_in(self, authorization: str, peer: str, what: str) -> None:
        """Refused(UNAUTHENTICATED) unless the request may act on the subscription."""
        if not self.required or self.holds(authorization):
            return
        why = (f"{what} needs the subscription's credential: a bearer token of the key that "
               "`kafka-wire token --management` prints")
        self._refusals.warn("subscription", client_address(peer), f"{what} from {peer} refused: {why}")
        raise Refused(Refusal.UNAUTHENTICATED, why)
