"""Every surface of every front end against every kind of credential, and from an
address the namespace's IP filter denies: the
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


@pytest.fixture(scope="module")
def filtered(tmp_path_factory):
    """The broker of ``hostile`` whose namespace admits only 127.0.0.2 (the clients here
    connect from 127.0.0.1), seeded the same way before the filter goes on."""
    import requests
    from confluent_kafka import Producer

    from tests.hostile.conftest import start
    from tests.hostile.surfaces import API, HOST, HUB, MG, NS, _kafka_conf

    broker = start(tmp_path_factory.mktemp("filtered") / "data")
    try:
        p = Producer(_kafka_conf(broker, CREDENTIALS[0]))
        p.produce(HUB, b"seed", partition=0)
        assert p.flush(15) == 0
        rules = {"properties": {"defaultAction": "Deny", "ipRules": [{"ipMask": "127.0.0.2/32"}]}}
        answer = requests.put(f"{broker.http_url}{MG}/{NS}/networkRuleSets/default{API}", json=rules,
                              headers={"Host": HOST, **CREDENTIALS[0].header()}, timeout=15)
        assert answer.status_code == 200, answer.text
        yield broker
    finally:
        broker.stop()


@pytest.mark.parametrize("surface", HTTP + KAFKA + AMQP, ids=[s.name for s in HTTP + KAFKA + AMQP])
def test_a_denied_address_is_refused_on_the_data_plane_with_the_root_credential(filtered, surface):
    """The IP filter guards every data-plane surface; management (ARM) is not behind it,
    as on Azure, so the owner of the rules cannot lock themselves out."""
    management = surface.name.startswith("mgmt")
    assert surface.served(filtered, CREDENTIALS[0]) == (management and surface.allowed(CREDENTIALS[0]))
