#!/usr/bin/env python3
"""Every alert in config/prometheus/linecap-rules.yml has a section in doc/runbook.md
("## AlertName" with **Meaning.**, **Confirm.** and **Act.**) and a runbook_url annotation
pointing at that section; every section belongs to a shipped alert. All runbook_urls share
one prefix, so rewriting it for another documentation site is one substitution.
usage: runbook_test.py [RULES RUNBOOK]. Exit 0 = pass, 1 = fail, 77 = skipped."""
import os
import re
import sys

from report import report

PARTS = ("**Meaning.**", "**Confirm.**", "**Act.**")


def main():
    src = os.environ.get("LINECAP_SRC") or os.path.join(os.path.dirname(__file__), "..", "..")
    rules_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(src, "config", "prometheus", "linecap-rules.yml")
    runbook_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(src, "doc", "runbook.md")
    try:
        import yaml
    except ImportError:
        print("SKIP: python3-yaml missing (scripts/install-deps.sh installs it)")
        sys.exit(77)
    with open(rules_path) as f:
        rules = yaml.safe_load(f)
    alerts = [r for g in rules["groups"] for r in g["rules"] if "alert" in r]
    with open(runbook_path) as f:
        runbook = f.read()
    sections = {}
    for m in re.finditer(r"^## (\S+)\n(.*?)(?=^## |\Z)", runbook, flags=re.M | re.S):
        sections[m.group(1)] = m.group(2)

    problems = []
    prefixes = set()
    for alert in alerts:
        name = alert["alert"]
        section = sections.get(name)
        if section is None:
            problems.append(f"{name}: no section '## {name}' in {runbook_path}")
        else:
            for part in PARTS:
                if part not in section:
                    problems.append(f"{name}: its runbook section lacks {part}")
        url = alert.get("annotations", {}).get("runbook_url", "")
        want = "doc/runbook.md#" + name.lower()  # the anchor a Markdown renderer gives "## Name"
        if not url.endswith(want):
            problems.append(f"{name}: runbook_url is '{url}', expected it to end in '{want}'")
        else:
            prefixes.add(url[: -len(want)])
    if len(prefixes) > 1:
        problems.append(f"the runbook_urls have different prefixes: {sorted(prefixes)}")
    names = {a["alert"] for a in alerts}
    for name in sections:
        if name not in names:
            problems.append(f"runbook section '{name}' is for no alert of {rules_path}")
    if not alerts:
        problems.append(f"no alerts read from {rules_path}")
    report(problems, f"{len(alerts)} alerts, each with a runbook section and its runbook_url")


if __name__ == "__main__":
    main()
