#!/usr/bin/env python3
"""accounted.py LOG SENT: from linecapd's shutdown summary in LOG (after the drain, so
exact), every packet that reached the port was written, filtered, kept out by a policy or
dropped by reason, and SENT ("any": a looping replay) reached it. Exit 1 with why if not."""
import re, sys
log, sent = sys.argv[1], sys.argv[2]
line = [l for l in open(log) if " packets reached the port, " in l][-1]
m = re.search(r"port (\S+): (\d+) packets reached the port, (\d+) written, (\d+) filtered, dropped:([^;]*)(.*)", line)
received, written, filtered = (int(m.group(i)) for i in (2, 3, 4))
dropped = sum(int(v) for v in re.findall(r"=(\d+)", m.group(5)))
policy = sum(int(v) for v in re.findall(r"=(\d+)", m.group(6)))
if sent != "any" and received != int(sent):
    sys.exit(f"{received} packets reached the port, {sent} sent")
if received != written + filtered + policy + dropped:
    sys.exit(f"received {received} != written {written} + filtered {filtered} + policy {policy} + dropped {dropped}")
print(f"accounted: received {received} = written {written} + filtered {filtered} + policy {policy} + dropped {dropped}")
