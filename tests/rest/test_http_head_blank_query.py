"""A blank query value is a value, not an absent parameter: REST send's ``?timeout=`` (or a
bare ``?timeout``) is refused 400 as any timeout that is not a whole number of seconds, after
the token is checked, and stores nothing; the default (60 s) is for a send without the
parameter. The other routes that read the query judge a blank value as they judge any value
they cannot read: management's ``?api-version=`` and the Schema Registry's are a 400 in ARM's
shape, the console API's ``?count=`` a 400 in its own."""
from __future__ import annotations

import pytest
import requests

from tests.rest.helpers import HOST, MG, end_offset, http_broker, token

broker = http_broker("http-blank-query")


def send(broker, query: str, auth: str | None = "good") -> requests.Response:
    headers = {"Host": HOST}
    if auth is not None:
        headers["Authorization"] = token() if auth == "good" else auth
    return requests.post(f"{broker.http_url}/payments/messages{query}", data=b"x", headers=headers,
                         timeout=30)


@pytest.mark.parametrize("query", ["?timeout=", "?timeout", "?timeout=&timeout=60", "?timeout=&",
                                   "?a=1&timeout=", "?timeout=%20", "?timeout=+"])
def test_a_blank_timeout_is_400_and_stores_nothing(broker, query):
    at = end_offset(broker)
    r = send(broker, query)
    assert r.status_code == 400, (query, r.text)
    assert r.text.startswith("<Error><Code>400</Code><Detail>timeout=") and "whole number of seconds" in r.text
    assert end_offset(broker) == at


@pytest.mark.parametrize("auth, why", [(None, "requires authentication"), ("wrong", "signature"),
                                       ("SharedAccessSignature sr=../../etc&sig=%C3%A0", "")])
def test_without_a_good_credential_a_blank_timeout_is_401_first(broker, auth, why):
    at = end_offset(broker)
    r = send(broker, "?timeout=", token("d3Jvbmc=") if auth == "wrong" else auth)
    assert r.status_code == 401 and why in r.text, r.text
    assert end_offset(broker) == at


def test_an_absent_timeout_and_other_blank_parameters_still_send(broker):
    at = end_offset(broker)
    for query in ("", "?", "?timeout=60", "?other=", "?other&timeout=0"):
        assert send(broker, query).status_code == 201, query
    assert end_offset(broker) == at + 5


def test_management_and_the_schema_registry_refuse_a_blank_api_version_in_arms_shape(broker):
    auth = {"Host": HOST, "Authorization": token()}
    r = requests.get(f"{broker.http_url}{MG}?api-version=", headers=auth, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["code"] == "MissingApiVersionParameter", r.text
    r = requests.get(f"{broker.http_url}/$schemaGroups/g/schemas/s?api-version=", headers=auth, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["code"] == "MissingApiVersion", r.text
    r = requests.get(f"{broker.http_url}{MG}?api-version=2024-01-01&x=", headers=auth, timeout=30)
    assert r.status_code == 200, r.text  # (a blank parameter a route does not read changes nothing)


def test_the_console_api_refuses_a_blank_count_as_one_that_does_not_parse(broker):
    base = f"{broker.http_url}/api/namespaces/contoso/hubs/payments/partitions/0/events"
    headers = {"Authorization": token()}
    r = requests.get(f"{base}?namespace=contoso&count=", headers=headers, timeout=30)
    assert r.status_code == 400 and "count" in r.json()["error"], r.text
    r = requests.get(f"{base}?namespace=contoso&count=5&q=", headers=headers, timeout=30)
    assert r.status_code == 200, r.text  # (a blank filter is no filter, as before)
