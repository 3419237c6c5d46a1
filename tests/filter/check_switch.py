#!/usr/bin/env python3
"""check_switch STREAM OLD_SEL OLD_SNAPLEN NEW_SEL NEW_SNAPLEN OUT MIN_K

OUT must be what a capture of STREAM writes when its policy switches once, between two
packets, from (old filter, old snap length) to (new filter, new snap length); see
check_switch in tests/filter/filter_lib.sh. Prints k, the stream packet of the switch.
"""
import sys

from linecap_harness import pcap


def read(path):
    return [(r.length, r.data) for r in pcap.records(path)]


stream_path, old_path, old_snap, new_path, new_snap, out_path, min_k = sys.argv[1:8]
old_snap, new_snap, min_k = int(old_snap), int(new_snap), int(min_k)
stream, out = read(stream_path), read(out_path)
keylen = min(old_snap, new_snap)
key = lambda r: (r[0], r[1][:keylen])  # noqa: E731
index = {}
for i, r in enumerate(stream):
    if key(r) in index:
        sys.exit(f"check_switch: stream packets {index[key(r)]} and {i} are alike in their first {keylen} bytes")
    index[key(r)] = i
old = [False] * len(stream)
new = [False] * len(stream)
for r in read(old_path):
    old[index[key(r)]] = True
for r in read(new_path):
    new[index[key(r)]] = True

pos = []
for j, r in enumerate(out):
    if key(r) not in index:
        sys.exit(f"check_switch: output record {j} (len {r[0]}) is not in the stream")
    pos.append(index[key(r)])
for j in range(1, len(pos)):
    if pos[j] <= pos[j - 1]:
        sys.exit(f"check_switch: output records {j-1} and {j} are stream packets {pos[j-1]} and {pos[j]}: "
                 "out of order or written twice")
old_idx = [i for i in range(len(stream)) if old[i]]
new_idx = [i for i in range(len(stream)) if new[i]]
lcp = 0
while lcp < min(len(pos), len(old_idx)) and pos[lcp] == old_idx[lcp]:
    lcp += 1
lcs = 0
while lcs < min(len(pos), len(new_idx)) and pos[-1 - lcs] == new_idx[-1 - lcs]:
    lcs += 1

def cut_ok(j, snap):
    length, data = out[j]
    want = stream[pos[j]][1][:min(length, snap)]
    return data == want

good = []
a = 0                   # old-kept packets before k
b = len(new_idx)        # new-kept packets at or after k
ni = 0
for k in range(len(stream) + 1):
    if k > 0:
        a += old[k - 1]
        b -= new[k - 1]
    if k >= min_k and a + b == len(pos) and a <= lcp and b <= lcs:
        good.append((k, a))
if not good:
    sys.exit(f"check_switch: no switch point k >= {min_k} explains the {len(pos)} records "
             f"(longest old prefix {lcp}, longest new suffix {lcs})")
# Several k fit when the packets between them are kept by neither filter; take any.
k, a = good[0]
for j in range(len(pos)):
    if not cut_ok(j, old_snap if j < a else new_snap):
        sys.exit(f"check_switch: record {j} (stream packet {pos[j]}) has caplen {len(out[j][1])}, len {out[j][0]}: "
                 f"wrong snap length for its side of the switch (k = {k})")
before_w = sum(old[min_k:k])
after = len(pos) - a
if k >= len(stream) or before_w == 0 or after == 0:
    sys.exit(f"check_switch: the switch (k = {k}) is not inside the stream: {before_w} old-kept packets "
             f"after {min_k}, {after} new-kept after k")
print(f"check_switch: one switch at stream packet {k} (of {len(stream)}; {len(good)} equivalent points): "
      f"{a} records by the old policy, {after} by the new one")
