"""Reading linecapd while it runs: per-thread CPU time and RSS (its /metrics:
linecap_harness.prometheus)."""

import os
import re


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
