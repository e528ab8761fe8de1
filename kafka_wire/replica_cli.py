"""``kafka-wire replica``: a running broker's geo-replicas through its replica
control API (``/$replicas`` on the HTTP listener; docs/georeplication.md).

    kafka-wire replica list [NAMESPACE] [--json]
    kafka-wire replica pause NAMESPACE LOCATION
    kafka-wire replica resume NAMESPACE LOCATION
    kafka-wire replica promote NAMESPACE LOCATION [--forced]

``--url``, ``--token`` and ``--data-dir`` as for ``kafka-wire fault`` (the
subscription's credential). Exit status: 0 done, 1 refused by the broker (its
message printed), 2 a broker that cannot be reached.
"""
from __future__ import annotations

import argparse
import json
import sys
import urllib.error
from urllib.parse import quote

from kafka_wire.fault_cli import call, control_options


def add_parser(sub) -> None:
    common = control_options()
    replica = sub.add_parser("replica", help="list, pause, resume and promote geo-replicas",
                             description="A geo-replicated namespace's replicas in a running broker, "
                             "through its /$replicas control API (see docs/georeplication.md).")
    verbs = replica.add_subparsers(dest="verb", required=True, metavar="list|pause|resume|promote")
    lst = verbs.add_parser("list", help="replicas, roles and lag", parents=[common])
    lst.add_argument("namespace", nargs="?", help="only this namespace")
    lst.add_argument("--json", action="store_true", help="the control API's JSON")
    for verb, what in (("pause", "stall a secondary (an unreachable region)"),
                       ("resume", "let a paused secondary catch up"),
                       ("promote", "make a secondary the primary")):
        p = verbs.add_parser(verb, help=what, parents=[common])
        p.add_argument("namespace")
        p.add_argument("location")
        if verb == "promote":
            p.add_argument("--forced", action="store_true",
                           help="switch at once: what had not replicated is lost")
    replica.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        if args.verb == "list":
            path = "/$replicas" + (f"/{quote(args.namespace, safe='')}" if args.namespace else "")
            status, answer = call(args, "GET", path)
        else:
            path = f"/$replicas/{quote(args.namespace, safe='')}/{quote(args.location, safe='')}/{args.verb}"
            body = {"forced": True} if getattr(args, "forced", False) else None
            status, answer = call(args, "POST", path, body)
    except (urllib.error.URLError, OSError) as exc:
        print(f"kafka-wire replica: cannot reach the broker at {args.url}: {exc}: start it, or give "
              "its HTTP listener with --url", file=sys.stderr)
        return 2
    if status >= 400:
        message = answer.get("error", {}).get("message") if isinstance(answer, dict) else answer
        print(f"kafka-wire replica {args.verb}: refused ({status}): {message}", file=sys.stderr)
        return 1
    if args.verb != "list" or args.json:
        print(json.dumps(answer, indent=1 if args.verb == "list" else None))
        return 0
    for ns in answer["value"] if "value" in answer else [answer]:
        mode = "synchronous" if ns["synchronous"] else f"asynchronous, max lag {ns['max_lag_seconds']} s"
        print(f"{ns['namespace']}: primary {ns['primary']}, segment {ns['segment']}, {mode}")
        for r in ns["replicas"]:
            print(f"  {r['location']:<20} {r['role']:<10} {r['state']:<11} lag {r['lag_seconds']:.1f} s, "
                  f"{r['lag_events']} events")
    return 0
