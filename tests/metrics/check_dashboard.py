#!/usr/bin/env python3
"""The Grafana dashboard is well formed and every query in it is valid PromQL.

Structure: schemaVersion, the DS_PROMETHEUS datasource variable (every panel and
target uses it), the instance and port variables, unique panel ids, panels inside the
24-column grid and not overlapping. PromQL: each expression, with Grafana's variables
replaced by sample values, is parsed by `promtool check rules` (skipped with a note when
promtool is missing; the structural checks still run).

Exit 0 = ok, 1 = problems (listed).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

GRAFANA_VARIABLES = {
    "$__rate_interval": "1m",
    "$__interval": "15s",
    "$__range": "1h",
    "${DS_PROMETHEUS}": "prometheus",
    "$instance": "cap1:9475",
    "$port": "wan",
}


def panels_of(dashboard):
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def check_structure(dashboard, problems):
    if not 36 <= dashboard.get("schemaVersion", 0) <= 39:
        problems.append(f"schemaVersion {dashboard.get('schemaVersion')} (expected ~38)")
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    ds = variables.get("DS_PROMETHEUS")
    if not ds or ds["type"] != "datasource" or ds["query"] != "prometheus":
        problems.append("no DS_PROMETHEUS datasource variable of type prometheus")
    for name in ("instance", "port"):
        if name not in variables or variables[name]["type"] != "query":
            problems.append(f"no '{name}' query variable")

    ids, cells = set(), {}
    for panel in panels_of(dashboard):
        title = panel.get("title", "?")
        if panel["id"] in ids:
            problems.append(f"panel '{title}': duplicate id {panel['id']}")
        ids.add(panel["id"])
        grid = panel["gridPos"]
        if grid["x"] < 0 or grid["x"] + grid["w"] > 24:
            problems.append(f"panel '{title}': outside the 24-column grid")
        covered = [(grid["x"] + dx, grid["y"] + dy) for dx in range(grid["w"]) for dy in range(grid["h"])]
        overlapped = next((cells[c] for c in covered if c in cells), None)
        if overlapped:
            problems.append(f"panel '{title}' overlaps '{overlapped}'")
        cells.update((c, title) for c in covered)
        if panel["type"] == "row":
            continue
        if panel.get("datasource", {}).get("uid") != "${DS_PROMETHEUS}":
            problems.append(f"panel '{title}': datasource is not ${{DS_PROMETHEUS}}")
        if not panel.get("targets"):
            problems.append(f"panel '{title}': no queries")
        for t in panel.get("targets", []):
            if t.get("datasource", {}).get("uid") != "${DS_PROMETHEUS}":
                problems.append(f"panel '{title}' query {t.get('refId')}: datasource is not ${{DS_PROMETHEUS}}")
            if not t.get("expr"):
                problems.append(f"panel '{title}' query {t.get('refId')}: empty expression")


def expressions(dashboard):
    for panel in panels_of(dashboard):
        for t in panel.get("targets", []):
            yield f"{panel['title']} / {t['refId']}", t["expr"]


def substitute(expression):
    for variable, value in GRAFANA_VARIABLES.items():
        expression = expression.replace(variable, value)
    return expression


def check_promql(dashboard, problems):
    promtool = shutil.which("promtool")
    if not promtool:
        print("note: promtool not found, PromQL not parsed (Debian: apt-get install prometheus)")
        return
    queries = list(expressions(dashboard))

    def check(path, batch):
        with open(path, "w") as f:
            json.dump({"groups": [{"name": f"q{n}", "rules": [
                {"record": "dashboard_query", "expr": substitute(expression)}]}
                for n, (_, expression) in enumerate(batch)]}, f)
        return subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True)

    # One promtool run for every query (63 runs took 25 s under load); only when that one
    # fails, one run per query to name each that does not parse.
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "queries.yml")
        if check(path, queries).returncode == 0:
            return
        for where, expression in queries:
            result = check(path, [(where, expression)])
            if result.returncode != 0:
                detail = (result.stderr or result.stdout).strip().splitlines()
                problems.append(f"'{where}': invalid PromQL: {detail[-1] if detail else '?'}")


def main():
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} DASHBOARD_JSON")
        return 2
    with open(sys.argv[1]) as f:
        dashboard = json.load(f)
    problems = []
    check_structure(dashboard, problems)
    check_promql(dashboard, problems)
    count = sum(1 for _ in expressions(dashboard))
    if problems:
        print("\n".join(problems))
        return 1
    print(f"ok: {sum(1 for _ in panels_of(dashboard))} panels, {count} queries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
