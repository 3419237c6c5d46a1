#!/usr/bin/env python3
"""Every metric name the alert/recording rules and the Grafana dashboard use exists.

Names starting with linecap_ must be produced by the exporter (its text output, taken
from the metrics_dump_exposition test binary, so histogram _bucket/_sum/_count count
too); names with a colon must be recording-rule outputs from the rules file. A name
another part of the daemon exports (not this exporter) is allowed only when listed in
EXPORTED_ELSEWHERE with the reason; the live-daemon integration test checks those.

With --scrape FILE instead of --exporter, the names come from a scrape of a LIVE daemon's
/metrics (tests/metrics/integration/live_names_test.sh): then every linecap_ name must be
in it, EXPORTED_ELSEWHERE ones too, except those named with --known-missing (reported).

Exit 0 = consistent, 1 = unknown names (listed), 77 = skipped (reason printed).
"""
import argparse
import json
import re
import subprocess
import sys

from linecap_harness import prometheus

# name → who exports it. Remove an entry once this exporter (or a test of the part that
# exports it) covers the name.
EXPORTED_ELSEWHERE = {
}

IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
STRING_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
RANGE_OR_SUBQUERY = re.compile(r"\[[^\]]*\]")
LABEL_MATCHERS = re.compile(r"\{[^}]*\}")


def exported_names(exporter):
    text = subprocess.run([exporter], check=True, capture_output=True, text=True).stdout
    return prometheus.names(text)


def referenced_names(expression):
    """Metric-like identifiers in a PromQL (or Grafana query) expression."""
    expression = STRING_LITERAL.sub('""', expression)
    expression = RANGE_OR_SUBQUERY.sub("", expression)   # [5m], [1h:5m]
    expression = LABEL_MATCHERS.sub("", expression)      # {port=~"$port"}
    return {token for token in IDENTIFIER.findall(expression)
            if token.startswith("linecap_") or ":" in token}


def rules_expressions(path):
    import yaml  # imported here so a missing module is a reported skip
    with open(path) as f:
        document = yaml.safe_load(f)
    records, expressions = set(), []
    for group in document.get("groups", []):
        for rule in group.get("rules", []):
            if "record" in rule:
                records.add(rule["record"])
            where = rule.get("record") or rule.get("alert")
            expressions.append((f"rules {group['name']}/{where}", rule["expr"]))
    return records, expressions


def dashboard_expressions(path):
    with open(path) as f:
        dashboard = json.load(f)
    found = []

    def walk(node, where):
        if isinstance(node, dict):
            title = node.get("title") or node.get("name") or where
            for key, value in node.items():
                if key in ("expr", "query", "definition") and isinstance(value, str):
                    found.append((f"dashboard '{title}'", value))
                else:
                    walk(value, title)
        elif isinstance(node, list):
            for item in node:
                walk(item, where)

    walk(dashboard, "dashboard")
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--exporter", help="binary printing the exposition text")
    source.add_argument("--scrape", help="a scrape of a live daemon's /metrics (text format)")
    parser.add_argument("--rules", required=True)
    parser.add_argument("--dashboard", required=True)
    parser.add_argument("--known-missing", action="append", default=[], metavar="NAME",
                        help="with --scrape: a name known not to be exported yet (reported, not a failure)")
    args = parser.parse_args()
    live = args.scrape is not None

    try:
        records, rule_exprs = rules_expressions(args.rules)
    except ImportError:
        print("SKIP: python3 has no yaml module (Debian: python3-yaml)")
        return 77
    if live:
        with open(args.scrape) as f:
            exported = prometheus.names(f.read())
    else:
        exported = exported_names(args.exporter)
    dash_exprs = dashboard_expressions(args.dashboard)
    not_in = "is not in the live daemon's /metrics" if live else "is not produced by the exporter"

    unknown, external_used, known_missing = [], set(), set()
    for where, expression in rule_exprs + dash_exprs:
        for name in sorted(referenced_names(expression)):
            if ":" in name:
                if name not in records:
                    unknown.append(f"{where}: {name} is not a recording rule in {args.rules}")
            elif live and name not in exported and name in args.known_missing:
                known_missing.add(name)
            elif not live and name in EXPORTED_ELSEWHERE:
                external_used.add(name)
            elif name not in exported:
                unknown.append(f"{where}: {name} {not_in}")

    print(f"{'the live daemon exports' if live else 'exporter produces'} {len(exported)} names; "
          f"rules record {len(records)}; "
          f"checked {len(rule_exprs)} rule and {len(dash_exprs)} dashboard expressions")
    for name in sorted(external_used):
        print(f"note: {name} is expected from {EXPORTED_ELSEWHERE[name]}")
    for name in sorted(known_missing):
        why = EXPORTED_ELSEWHERE.get(name, "nobody yet")
        print(f"KNOWN MISSING: {name} is used but not exported by the live daemon (expected from {why})")
    for name in sorted(set(args.known_missing) & exported):
        print(f"note: {name} is exported now: drop it from --known-missing")
    if unknown:
        print("unknown metric names:")
        for line in unknown:
            print("  " + line)
        return 1
    print("ok: every referenced name exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
