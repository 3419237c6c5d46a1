"""Reading linecapd while it runs: the Prometheus endpoint, per-thread CPU time, RSS."""

import os
import re
import urllib.request


METRIC_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s+(\S+)")
LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def scrape(url):
    with urllib.request.urlopen(url, timeout=2) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = METRIC_LINE.match(line)
        if not m:
            continue
        labels = tuple(sorted(LABEL.findall(m.group(3) or "")))
        try:
            out[(m.group(1), labels)] = float(m.group(4))
        except ValueError:
            pass
    return out


def scrape_ok(url):
    try:
        scrape(url)
        return True
    except Exception:
        return False


def msum(sample, name, **want):
    total = 0.0
    for (n, labels), v in sample.items():
        if n != name:
            continue
        d = dict(labels)
        if all(d.get(k) == v2 for k, v2 in want.items()):
            total += v
    return total


def mvalues(sample, name):
    return [v for (n, _), v in sample.items() if n == name]


def thread_cpu(pid):
    """CPU seconds per thread name of a process (utime + stime)."""
    out = {}
    hz = os.sysconf("SC_CLK_TCK")
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                s = f.read()
        except FileNotFoundError:
            continue
        name = s[s.index("(") + 1:s.rindex(")")]
        fields = s[s.rindex(")") + 2:].split()
        cpu = (int(fields[11]) + int(fields[12])) / hz
        last_cpu = int(fields[36])
        key = name
        while key in out:
            key += "+"
        out[key] = (cpu, last_cpu)
    return out


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            m = re.search(r"VmRSS:\s*(\d+)", f.read())
        return int(m.group(1)) if m else 0
    except FileNotFoundError:
        return 0
