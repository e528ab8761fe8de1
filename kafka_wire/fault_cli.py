"""``kafka-wire fault``: set, list and clear faults in a running broker through
its fault control API (``/$faults`` on the HTTP listener; docs/faults.md).

    kafka-wire fault add KIND [--hub H] [--partition P] [--consumer-group G]
                              [--namespace N] [--client C] [--link L]
                              [--count N] [--probability P --seed S]
                              [--after-ms MS] [--for-ms MS] [--param KEY=VALUE ...]
    kafka-wire fault list [--json]
    kafka-wire fault clear [ID]

``--url`` names the listener (default ``http://127.0.0.1:5300``, ``make run``'s);
the credential is the subscription's: ``--token``, else ``$KAFKA_WIRE_TOKEN``,
else the key kept in ``--data-dir`` (default ``./data``), as
``kafka-wire token --management`` prints it. Exit status: 0 done, 1 refused by
the broker (its message printed), 2 a broker that cannot be reached.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

from kafka_wire.fault_plan import KINDS
from kafka_wire.whole_numbers import whole_number

DEFAULT_URL = "http://127.0.0.1:5300"


def _param(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE (e.g. condition=amqp:link:stolen)")
    number = whole_number(value, signed=True)
    return key, value if number is None else number


def control_options() -> argparse.ArgumentParser:
    """--url, --token and --data-dir: how a control command reaches a running broker
    (the parent parser of ``kafka-wire fault`` and ``kafka-wire replica`` verbs)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", default=os.environ.get("KAFKA_WIRE_URL", DEFAULT_URL),
                        help=f"the broker's HTTP listener (default $KAFKA_WIRE_URL, else {DEFAULT_URL})")
    common.add_argument("--token", help="the subscription's credential (default: $KAFKA_WIRE_TOKEN, "
                                        "else the key in --data-dir)")
    common.add_argument("--data-dir", default="./data", help="where the broker keeps subscription.key")
    return common


def add_parser(sub) -> None:
    common = control_options()
    fault = sub.add_parser("fault", help="set, list and clear faults in a running broker",
                           description="Set, list and clear injected faults in a running broker "
                           "through its /$faults control API (see docs/faults.md).")
    verbs = fault.add_subparsers(dest="verb", required=True, metavar="add|list|clear")
    add = verbs.add_parser("add", help="set a fault", parents=[common])
    add.add_argument("kind", help=", ".join(KINDS))
    for scope in ("namespace", "hub", "partition", "consumer-group", "client", "link"):
        add.add_argument(f"--{scope}", help=f"only this {scope.replace('-', ' ')} (default: any)")
    add.add_argument("--count", type=int, default=1, help="fire this many times (default 1)")
    add.add_argument("--probability", type=float, default=1.0, help="fire with this chance (0-1]")
    add.add_argument("--seed", type=int, default=0, help="seed of the chance (default 0)")
    add.add_argument("--after-ms", type=int, default=0, help="start this long after being set")
    add.add_argument("--for-ms", type=int, help="then fire only for this long")
    add.add_argument("--param", type=_param, action="append", default=[], metavar="KEY=VALUE",
                     help="a parameter of the kind (condition, description, status, "
                          "retry_after_s, api, error, ms)")
    lst = verbs.add_parser("list", help="the faults set and those fired", parents=[common])
    lst.add_argument("--json", action="store_true", help="the control API's JSON")
    clear = verbs.add_parser("clear", help="clear every fault (or one)", parents=[common])
    clear.add_argument("id", nargs="?", type=int, help="only this fault")
    fault.set_defaults(func=run)


def _token(args) -> str | None:
    if args.token:
        return args.token
    if os.environ.get("KAFKA_WIRE_TOKEN"):
        return os.environ["KAFKA_WIRE_TOKEN"]
    from kafka_wire.eventhubs.subscription import read_key
    return read_key(Path(args.data_dir))


def call(args, method: str, path: str, body: dict | None = None) -> tuple[int, object]:
    """One control API request with the command's credential: (status, JSON answer)."""
    url = args.url.rstrip("/") + path
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    token = _token(args)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw)
        except ValueError:
            return exc.code, {"error": {"message": raw.decode("utf-8", "replace")[:500]}}


def run(args: argparse.Namespace) -> int:
    try:
        if args.verb == "add":
            scope = {k.replace("-", "_"): getattr(args, k.replace("-", "_"))
                     for k in ("namespace", "hub", "partition", "consumer-group", "client", "link")}
            body = {"kind": args.kind, "scope": {k: v for k, v in scope.items() if v is not None},
                    "params": dict(args.param), "count": args.count,
                    "probability": args.probability, "seed": args.seed, "after_ms": args.after_ms}
            if args.for_ms is not None:
                body["for_ms"] = args.for_ms
            status, answer = call(args, "POST", "/$faults", body)
        elif args.verb == "list":
            status, answer = call(args, "GET", "/$faults")
        else:
            status, answer = call(args, "DELETE", "/$faults" + (f"/{args.id}" if args.id else ""))
    except (urllib.error.URLError, OSError) as exc:
        print(f"kafka-wire fault: cannot reach the broker at {args.url}: {exc}: start it, or give "
              "its HTTP listener with --url", file=sys.stderr)
        return 2
    if status >= 400:
        message = answer.get("error", {}).get("message") if isinstance(answer, dict) else answer
        print(f"kafka-wire fault {args.verb}: refused ({status}): {message}", file=sys.stderr)
        return 1
    if args.verb == "add":
        print(json.dumps(answer))
    elif args.verb == "list":
        if args.json:
            print(json.dumps(answer, indent=1))
        else:
            for f in answer["faults"]:
                scope = " ".join(f"{k}={v}" for k, v in f["scope"].items()) or "(anywhere)"
                print(f"#{f['id']} {f['kind']} {scope} fired {f['fired']}/{f['count']}")
            for f in answer["fired"]:
                target = " ".join(f"{k}={v}" for k, v in f["target"].items())
                print(f"fired at {f['at_ms']}: #{f['fault']} {f['kind']} {target}")
    return 0
