#!/usr/bin/env python3
"""The flake hunt's table (python3 standard library only): per test, over several meson test
logs (meson-logs/*.json, one JSON object per test run), how often it ran, failed and skipped,
and its slowest run against its timeout.

Usage: flake_report.py --tests INTROSPECT.json [--multiplier M] LOG.json...

  --tests       `meson introspect --tests BUILD` saved to a file: each test's timeout
  --multiplier  meson test's -t (timeouts are multiplied by it; default 1)

Prints the table, worst first (failures, then the slowest run's share of its timeout). A test whose slowest run took more
than half its timeout is marked "headroom < 2x": under this load it is closer to its
timeout than the suite allows (tests/README.md, "Hunting flakes"). Exit 0 when no run
failed, 1 when one did, 2 on unusable input.
"""

import argparse
import json
import sys

PASSED = ("OK", "EXPECTEDFAIL")


def unusable(message):
    print(f"flake_report: {message}", file=sys.stderr)
    sys.exit(2)


def read_runs(paths):
    runs = []
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    line = line.strip()
                    if line:
                        runs.append(json.loads(line))
        except (OSError, ValueError) as e:
            unusable(f"{path}: {e}")
    return runs


def table(runs, timeouts, multiplier):
    rows = {}
    for r in runs:
        # The log names a test "project:suite / name"; the test list by its name alone.
        name = r.get("name", "?").rpartition(" / ")[2]
        row = rows.setdefault(name, {"runs": 0, "failed": 0, "skipped": 0, "slowest": 0.0, "results": []})
        row["runs"] += 1
        result = r.get("result")
        if result == "SKIP":
            row["skipped"] += 1
        elif result not in PASSED:
            row["failed"] += 1
            row["results"].append(result)
        row["slowest"] = max(row["slowest"], float(r.get("duration") or 0))
    for name, row in rows.items():
        timeout = timeouts.get(name)
        row["timeout"] = timeout * multiplier if timeout else None
        row["share"] = row["slowest"] / row["timeout"] if row["timeout"] else 0.0
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", required=True)
    parser.add_argument("--multiplier", type=float, default=1.0)
    parser.add_argument("logs", nargs="+")
    args = parser.parse_args()
    try:
        with open(args.tests, encoding="utf-8") as f:
            timeouts = {t["name"]: t.get("timeout") or 0 for t in json.load(f)}
    except (OSError, ValueError, KeyError, TypeError) as e:
        unusable(f"{args.tests}: not meson's test list: {e}")

    rows = table(read_runs(args.logs), timeouts, args.multiplier)
    order = sorted(rows.items(), key=lambda kv: (-kv[1]["failed"], -kv[1]["share"], kv[0]))
    width = max([len("test")] + [len(n) for n in rows])
    print(f"{'test':<{width}}  runs  failed  skipped  slowest s  timeout s  share")
    for name, row in order:
        timeout = f"{row['timeout']:.0f}" if row["timeout"] else "none"
        mark = "  headroom < 2x" if row["share"] > 0.5 else ""
        if row["results"]:
            mark += "  (" + ", ".join(row["results"]) + ")"
        print(f"{name:<{width}}  {row['runs']:>4}  {row['failed']:>6}  {row['skipped']:>7}  "
              f"{row['slowest']:>9.1f}  {timeout:>9}  {row['share']:>5.2f}{mark}")
    return 1 if any(r["failed"] for r in rows.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
