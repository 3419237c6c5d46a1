#!/usr/bin/env python3
"""doc/linecapd.8 stays in step with the daemon: every option `linecapd --help` lists and
every key of the example configuration (config/linecap.yaml) is in the man page, the exit
codes and test-only environment variables are documented, and groff formats the page
without warnings. Exit 0 = pass, 1 = fail, 77 = skipped (with the reason printed)."""
import os
import re
import shutil
import subprocess
import sys


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    src = os.environ.get("LINECAP_SRC") or os.path.join(os.path.dirname(__file__), "..", "..")
    linecapd = os.environ.get("LINECAPD", "")
    man_path = os.path.join(src, "doc", "linecapd.8")
    with open(man_path) as f:
        roff = f.read()
    # What a reader sees: roff escapes and font requests removed.
    text = roff.replace("\\-", "-").replace("\\(mu", "x")
    text = re.sub(r"\\f[BIRP]", "", text)
    text = re.sub(r"^\.(B|I|BR|IR|RB|TP|PP|SS|SH|TH|br)\b ?", "", text, flags=re.M)
    text = text.replace('"', "")

    problems = []
    if not linecapd or not os.access(linecapd, os.X_OK):
        print("SKIP: linecapd not built (set LINECAPD)", file=sys.stderr)
        sys.exit(77)
    usage = subprocess.run([linecapd, "--help"], capture_output=True, text=True, check=True).stdout
    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[a-zA-Z])\b", usage))
    for opt in sorted(options):
        if not re.search(r"(?<![\w-])" + re.escape(opt) + r"\b", text):
            problems.append(f"option {opt} (from linecapd --help) is not in the man page")
    for code in re.findall(r"\b(\d+) (?:ok|runtime failure|usage|configuration)", usage):
        if not re.search(r"^" + code + r"$", text, flags=re.M):
            problems.append(f"exit code {code} is not under EXIT STATUS")
    for var in ("LINECAP_SYSFS", "LINECAP_PROC", "NOTIFY_SOCKET", "WATCHDOG_USEC"):
        if var not in text:
            problems.append(f"environment variable {var} is not documented")
    for signame in ("SIGHUP", "SIGTERM", "SIGINT"):
        if signame not in text:
            problems.append(f"signal {signame} is not documented")

    # Every key of the example configuration, by its last path component under its section.
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml is None:
        print("note: python3-yaml missing, configuration keys not compared", file=sys.stderr)
    else:
        with open(os.path.join(src, "config", "linecap.yaml")) as f:
            cfg = yaml.safe_load(f)

        def keys(node, path):
            if isinstance(node, dict):
                for k, v in node.items():
                    yield from keys(v, path + [str(k)])
                    yield path + [str(k)]
            elif isinstance(node, list):
                for item in node:
                    yield from keys(item, path)

        for path in sorted(set(map(tuple, keys(cfg, [])))):
            leaf = path[-1]
            # nested keys are written "rotate.size_mb" / "retention.max_age" in the page
            name = ".".join(path[1:]) if len(path) > 2 and path[0] == "output" else leaf
            if path[0] == "capture" and len(path) > 2:
                name = leaf  # workers[].lcore / .queues
            if not re.search(r"(?<![\w.])" + re.escape(name) + r"\b", text):
                problems.append(f"configuration key {'.'.join(path)} is not in the man page")

    groff = shutil.which("groff")
    if groff:
        r = subprocess.run([groff, "-man", "-ww", "-z", man_path], capture_output=True, text=True)
        if r.returncode != 0 or r.stderr.strip():
            problems.append("groff warnings:\n" + r.stderr)
    else:
        print("note: groff missing, formatting not checked", file=sys.stderr)

    if problems:
        fail("\n  ".join(["doc/linecapd.8 is out of date:"] + problems))
    print(f"man page covers {len(options)} options and the example configuration's keys", file=sys.stderr)


if __name__ == "__main__":
    main()
