"""Every surface of every front end against every kind of credential: the
namespace's door lets in exactly what the credential's rights allow and refuses
the rest with the front end's own answer (401/403, a SASL or authorization
error, an AMQP condition), never a 500. The root credential is served
everywhere but the subscription's routes, which shows the refusals are the
door's and not a broken surface."""
from __future__ import annotations

import pytest

from tests.hostile.surfaces import AMQP, CREDENTIALS, HTTP, KAFKA

CASES = [(s, c) for s in HTTP + KAFKA + AMQP for c in CREDENTIALS
         if not (s in AMQP and c.kind == "none")]  # the SDKs cannot connect without a credential


@pytest.mark.parametrize("surface,credential", CASES,
                         ids=[f"{s.name}-{c.kind}" for s, c in CASES])
def test_the_door_serves_exactly_what_the_credential_allows(hostile, surface, credential):
    assert surface.served(hostile, credential) == surface.allowed(credential)
