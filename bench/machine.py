"""The conditions a figure was measured under: CPU, kernel, load, file systems."""

import contextlib
import datetime
import os
import re
import subprocess
import time

from harness import ROOT


def sh(cmd, check=False):
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{cmd}: {r.stderr.strip()}")
    return r.stdout.strip()


CPU_KINDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def system_cpu():
    """The machine's CPU seconds so far by kind (/proc/stat's first line, all CPUs)."""
    with open("/proc/stat") as f:
        ticks = f.readline().split()[1:1 + len(CPU_KINDS)]
    hz = os.sysconf("SC_CLK_TCK")
    return {k: int(t) / hz for k, t in zip(CPU_KINDS, ticks)}


def load_now():
    """Load averages and a one-shot CPU busy share over 0.5 s (all CPUs)."""
    def stat():
        v = system_cpu()
        return sum(v.values()), v["idle"] + v["iowait"]
    t1, i1 = stat()
    time.sleep(0.5)
    t2, i2 = stat()
    busy = 1.0 - (i2 - i1) / max(1e-9, t2 - t1)
    la = os.getloadavg()
    return {"loadavg": [round(x, 2) for x in la], "cpu_busy_pct": round(100 * busy, 1)}


class KernelSetting:
    """A kernel setting (a file under /proc/sys or /sys) changed for a run and restored after
    (also on SIGTERM, which the benchmark programs turn into SystemExit)."""

    def __init__(self, path, value):
        self.path, self.value = path, str(value)

    @staticmethod
    def read(path):
        """The setting's value, or None when this kernel has no such file."""
        try:
            with open(path) as fh:
                return fh.read().strip()
        except FileNotFoundError:
            return None

    @staticmethod
    def write(path, value):
        with open(path, "w") as fh:
            fh.write(value)

    def __enter__(self):
        self.saved = KernelSetting.read(self.path)
        KernelSetting.write(self.path, self.value)
        return self

    def __exit__(self, *exc):
        KernelSetting.write(self.path, self.saved)


def sysctl(name):
    """The file of a sysctl: "kernel.sched_autogroup_enabled" -> /proc/sys/kernel/..."""
    return "/proc/sys/" + name.replace(".", "/")


# A VM with a virtio balloon reports free memory to the host, which takes it back; the next
# write to such a page faults in the host, and a file system written into just-freed memory
# writes at a quarter of its speed (the field notes: 0.9 against 3.8 GB/s). min_free_ms is
# how long a freed block stays unreported (this kernel's page_reporting; 0 here: at once).
PAGE_REPORTING_DELAY = "/sys/module/page_reporting/parameters/min_free_ms"


def page_reporting_delay():
    """This VM's free page reporting delay in ms, or None (no such parameter: not reported)."""
    value = KernelSetting.read(PAGE_REPORTING_DELAY)
    return None if value is None else int(value)


def delayed_page_reporting(ms):
    """For the run, freed memory stays unreported to the host for `ms` (None: as it is), so
    that what a row writes into memory another row freed is not slowed by the host."""
    if ms is None or page_reporting_delay() is None:
        return contextlib.nullcontext()
    return KernelSetting(PAGE_REPORTING_DELAY, ms)


def reporting_text(ms):
    """page_reporting_delay() in words, for the conditions of a table."""
    if ms is None:
        return "never (no page_reporting)"
    return "at once" if ms == 0 else f"after {ms} ms (--page-reporting-delay-ms)"


def machine_conditions():
    lscpu = sh("lscpu")
    model = re.search(r"Model name:\s*(.*)", lscpu)
    mhz = re.findall(r"cpu MHz\s*:\s*([\d.]+)", open("/proc/cpuinfo").read())
    return {
        "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
        "cpu_model": model.group(1).strip() if model else "?",
        "cpu_mhz": mhz[0] if mhz else "?",
        "cpus": os.cpu_count(),
        "hypervisor": (re.search(r"Hypervisor vendor:\s*(.*)", lscpu) or [None, "none"])[1],
        "l2": (re.search(r"L2 cache:\s*(.*)", lscpu) or [None, "?"])[1],
        "l3": (re.search(r"L3 cache:\s*(.*)", lscpu) or [None, "?"])[1],
        "kernel": os.uname().release,
        "mem_total_gib": round(int(re.search(r"MemTotal:\s*(\d+)", open("/proc/meminfo").read()).group(1)) / 2**20, 1),
        "dpdk": sh("pkg-config --modversion libdpdk") or "?",
        "linecap": sh(f"git -C {ROOT} describe --always --dirty 2>/dev/null") or "?",
        "page_reporting_delay_ms": page_reporting_delay(),
    }


def fs_of(path):
    out = sh(f"findmnt -n -o FSTYPE,SOURCE,OPTIONS --target {path}")
    parts = out.split(None, 2)
    return {"path": path, "fstype": parts[0] if parts else "?", "source": parts[1] if len(parts) > 1 else "?",
            "options": parts[2] if len(parts) > 2 else ""}
