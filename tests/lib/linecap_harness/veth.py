"""The live rig of the tests and benchmarks: a network namespace and a veth pair into it.

The capture side stays in the root namespace and the peer goes into the namespace; both are
up with no address and IPv6 disabled, so the kernel sends nothing of its own on them, and
traffic only ever flows inside the pair. `VethPair.up()` returns once both links are
operationally up (before that the kernel drops what is sent).

The receive path: a veth hands each frame to its peer inside the sender's sendto(), so by
default the receiving side's kernel work (an XDP program and its copies, a packet socket's
copy) runs on the sender's CPU. With `napi_thread=(cpu, priority)` the capture side gets a
NAPI instance run by a kernel thread of its own (GRO on the receiving end, so the veth uses
NAPI without XDP too; TSO and GSO off on the sending end, whose socket buffers would
otherwise bypass it), pinned to `cpu` at SCHED_FIFO `priority`, as a NIC's receive work runs
in its interrupt's context on the CPU the interrupt is steered to.

From the shell (tests/lib/common.sh's veth_pair):
  python3 -m linecap_harness.veth up NS CAP PEER [--mtu N] [--queues N]
  python3 -m linecap_harness.veth down NS CAP
`up` exits 77 when this machine cannot make a namespace or a veth (the test is skipped),
1 on any other failure, with the reason on stderr.
"""
import argparse
import json
import os
import subprocess
import sys
import time


class RigUnavailable(RuntimeError):
    """The machine cannot make the rig at all (no namespaces, no veth driver)."""


def _run(*args, check=True):
    r = subprocess.run(args, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {(r.stderr or r.stdout).strip()}")
    return r


class VethPair:
    def __init__(self, ns, cap, peer, mtu=1500, queues=None, napi_thread=None):
        self.ns, self.cap, self.peer = ns, cap, peer
        self.mtu, self.queues, self.napi_thread = mtu, queues, napi_thread

    def up(self, timeout=5.0):
        r = _run("ip", "netns", "add", self.ns, check=False)
        if r.returncode != 0:
            raise RigUnavailable(f"cannot create a network namespace: {r.stderr.strip()}")
        qopt = ["numtxqueues", str(self.queues), "numrxqueues", str(self.queues)] if self.queues else []
        r = _run("ip", "link", "add", self.cap, "mtu", str(self.mtu), *qopt, "type", "veth",
                 "peer", "name", self.peer, "mtu", str(self.mtu), *qopt, "netns", self.ns, check=False)
        if r.returncode != 0:
            if "not supported" in r.stderr or "Unknown device type" in r.stderr:
                raise RigUnavailable(f"veth not available: {r.stderr.strip()}")
            raise RuntimeError(f"ip link add {self.cap}/{self.peer}: {r.stderr.strip()}")
        if os.path.isdir("/proc/sys/net/ipv6"):
            _run("sysctl", "-qw", f"net.ipv6.conf.{self.cap}.disable_ipv6=1")
            self.in_ns("sysctl", "-qw", f"net.ipv6.conf.{self.peer}.disable_ipv6=1")
        if self.napi_thread:
            _run("ethtool", "-K", self.cap, "gro", "on")
            self.in_ns("ethtool", "-K", self.peer, "tso", "off", "gso", "off")
        _run("ip", "link", "set", "dev", self.cap, "up")
        _run("ip", "-n", self.ns, "link", "set", "dev", self.peer, "up")
        if self.napi_thread:
            with open(f"/sys/class/net/{self.cap}/threaded", "w") as fh:
                fh.write("1")
        deadline = time.monotonic() + timeout
        while not self._both_up():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.cap}/{self.peer} did not come up")
            time.sleep(0.05)
        self.place_napi_threads()
        return self

    def down(self):
        # Deleting one end deletes both; deleting the namespace would too.
        _run("ip", "link", "del", self.cap, check=False)
        _run("ip", "netns", "del", self.ns, check=False)

    def in_ns(self, *cmd, check=True):
        return _run("ip", "netns", "exec", self.ns, *cmd, check=check)

    def _both_up(self):
        try:
            with open(f"/sys/class/net/{self.cap}/operstate") as fh:
                if fh.read().strip() != "up":
                    return False
        except OSError:
            return False
        return "state UP" in _run("ip", "-n", self.ns, "link", "show", "dev", self.peer, check=False).stdout

    def napi_threads(self):
        """The kernel threads running the capture side's NAPI (none without napi_thread)."""
        prefix = f"napi/{self.cap}-"[:15]  # a task's comm can be cut to 15 characters
        tids = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/comm") as fh:
                    if fh.read().startswith(prefix):
                        tids.append(int(pid))
            except OSError:
                pass
        return tids

    def place_napi_threads(self):
        """Pins the NAPI threads where napi_thread says. Call again before every trial:
        attaching or removing an XDP program can restart a veth's NAPI."""
        if not self.napi_thread:
            return
        cpu, priority = self.napi_thread
        for tid in self.napi_threads():
            os.sched_setaffinity(tid, {cpu})
            os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(priority))

    def state(self):
        """What the kernel says of the receive path: NAPI threaded (and where and how its
        threads run), GRO on the receiving end, TSO on the sending end."""
        def feature(out, name):
            line = next((ln for ln in out.splitlines() if ln.strip().startswith(name + ":")), "")
            return line.split(":")[1].split()[0] if line else "?"
        with open(f"/sys/class/net/{self.cap}/threaded") as fh:
            threaded = fh.read().strip() == "1"
        threads = [{"cpus": sorted(os.sched_getaffinity(t)),
                    "policy": "fifo" if os.sched_getscheduler(t) == os.SCHED_FIFO else str(os.sched_getscheduler(t)),
                    "priority": os.sched_getparam(t).sched_priority} for t in self.napi_threads()]
        return {"napi_threaded": threaded, "napi_threads": threads,
                "receiver_gro": feature(_run("ethtool", "-k", self.cap).stdout, "generic-receive-offload"),
                "sender_tso": feature(self.in_ns("ethtool", "-k", self.peer).stdout, "tcp-segmentation-offload")}

    def link_stats(self, side):
        """The stats64 of one end: "cap" or "peer" (root reads the other namespace's)."""
        netns, name = ([], self.cap) if side == "cap" else (["-n", self.ns], self.peer)
        out = subprocess.run(["ip", *netns, "-s", "-j", "link", "show", name],
                             capture_output=True, text=True, check=True, timeout=10).stdout
        return json.loads(out)[0]["stats64"]


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m linecap_harness.veth", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="make the namespace and the pair, both up")
    up.add_argument("ns")
    up.add_argument("cap")
    up.add_argument("peer")
    up.add_argument("--mtu", type=int, default=1500)
    up.add_argument("--queues", type=int)
    down = sub.add_parser("down", help="remove the pair and the namespace")
    down.add_argument("ns")
    down.add_argument("cap")
    args = p.parse_args(argv)
    if args.cmd == "down":
        VethPair(args.ns, args.cap, "").down()
        return 0
    try:
        VethPair(args.ns, args.cap, args.peer, mtu=args.mtu, queues=args.queues).up()
    except RigUnavailable as e:
        print(e, file=sys.stderr)
        return 77
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
