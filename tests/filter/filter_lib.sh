# shellcheck shell=bash
# tests/filter/filter_lib.sh: helpers shared by the capture-filter integration tests.
# Source after tests/lib/common.sh.

CRAFT_PCAP="$LINECAP_SRC/tests/filter/craft_pcap.py"

# craft_pcap ARGS...: tests/filter/craft_pcap.py (edge-case frames with known addresses).
craft_pcap() { python3 "$CRAFT_PCAP" "$@"; }

# records FILE_OR_DIR...: total number of complete pcap records in the files, counting a
# directory's hidden in-progress files (.*.part) too and ignoring a partly written last
# record. For polling while the daemon writes: wait_for "(( \$(records DIR) >= N ))".
records() { _count_records total "$@"; }

# records_each FILE...: the number of complete records of each file, one per line.
records_each() { _count_records each "$@"; }

_count_records() {  # MODE (total|each) FILE_OR_DIR...
    python3 - "$@" <<'PY'
import os, struct, sys
def count(path):
    n = 0
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:  # renamed or deleted while we looked: the next poll sees it
        return 0
    if len(data) < 24:
        return 0
    magic = struct.unpack("<I", data[:4])[0]
    bo = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off = 24
    while off + 16 <= len(data):
        caplen = struct.unpack(bo + "I", data[off + 8:off + 12])[0]
        if off + 16 + caplen > len(data):
            break
        off += 16 + caplen
        n += 1
    return n
mode, total = sys.argv[1], 0
for arg in sys.argv[2:]:
    if mode == "each":
        print(count(arg))
    elif os.path.isdir(arg):
        for name in os.listdir(arg):
            if name.endswith(".pcap") or name.endswith(".pcap.part"):
                total += count(os.path.join(arg, name))
    else:
        total += count(arg)
if mode == "total":
    print(total)
PY
}

# cat_pcaps OUT IN...: OUT = the records of the IN files one after the other, as a
# nanosecond pcap (microsecond inputs, e.g. from tcpdump -w, are converted) with the
# largest snap length of the inputs; no IN files: an empty capture.
cat_pcaps() {
    python3 - "$@" <<'PY'
import struct, sys
out, ins = sys.argv[1], sys.argv[2:]
snaplen, body = 0, []
for path in ins:
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    if magic not in (0xA1B23C4D, 0xA1B2C3D4):
        sys.exit(f"cat_pcaps: {path}: not a little-endian pcap")
    snaplen = max(snaplen, struct.unpack("<I", data[16:20])[0])
    if magic == 0xA1B23C4D:
        body.append(data[24:])
        continue
    off, recs = 24, []
    while off + 16 <= len(data):
        sec, usec, caplen, length = struct.unpack("<IIII", data[off:off + 16])
        recs.append(struct.pack("<IIII", sec, usec * 1000, caplen, length) + data[off + 16:off + 16 + caplen])
        off += 16 + caplen
    body.append(b"".join(recs))
with open(out, "wb") as o:
    o.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, snaplen or 262144, 1))
    for b in body:
        o.write(b)
PY
}

# stream_output OUTDIR PORT QUEUE RESULT: RESULT = the finished files of (PORT, QUEUE) in
# OUTDIR, in name (= time) order, concatenated; prints how many files there were.
stream_output() {
    local dir=$1 port=$2 queue=$3 result=$4 files restore
    restore=$(shopt -p nullglob || true)
    shopt -s nullglob
    files=("$dir"/*"-$port-q$queue.pcap")
    eval "$restore"
    cat_pcaps "$result" "${files[@]}"
    echo "${#files[@]}"
}

# await_records DIR N TIMEOUT_S: wait until DIR holds N records (a net_pcap replay is
# complete), then stop the daemon (SIGTERM, exit 0 expected). On a timeout the daemon is
# stopped too and the test fails with its accounting lines, which tell why (drops?).
await_records() {
    local dir=$1 n=$2 timeout=$3 ok=1
    wait_for "(( \$(records '$dir') >= $n )) || ! linecapd_running" "$timeout" || ok=0
    linecapd_running || fail "linecapd exited before writing $n records ($(records "$dir") written)"
    stop_linecapd || fail "linecapd exited $LINECAPD_RC"
    ((ok)) || fail "capture incomplete after ${timeout}s: $(records "$dir") of $n records; $(grep 'reached the port' "$LINECAPD_LOG" | sed 's/.* info //' | tr '\n' ';')"
}

# summary_of PORT: the daemon's final accounting line for PORT from $LINECAPD_LOG.
summary_of() { grep -E "port $1: [0-9]+ packets reached the port" "$LINECAPD_LOG" | tail -n 1; }

# summary_number PORT WHAT: one number from that line (WHAT: reached, written, filtered).
summary_number() {
    local line
    line=$(summary_of "$1")
    case $2 in
        reached) sed -E 's/.*: ([0-9]+) packets reached the port.*/\1/' <<<"$line" ;;
        written) sed -E 's/.* ([0-9]+) written,.*/\1/' <<<"$line" ;;
        filtered) sed -E 's/.* ([0-9]+) filtered,.*/\1/' <<<"$line" ;;
    esac
}

# check_switch STREAM OLD_SEL OLD_SNAPLEN NEW_SEL NEW_SNAPLEN OUT MIN_K: OUT must be what a
# capture of STREAM writes when its policy switches once, between two packets, from (old
# filter, old snap length) to (new filter, new snap length): for some k >= MIN_K,
#     OUT == [STREAM[i] for i < k if old keeps it, cut at OLD_SNAPLEN]
#          ++ [STREAM[i] for i >= k if new keeps it, cut at NEW_SNAPLEN]
# OLD_SEL / NEW_SEL are tcpdump's selections (tcpdump -r STREAM -w SEL 'expr'). The switch
# must fall strictly inside STREAM[MIN_K:] with packets on both sides of it. Prints k.
check_switch() {
    python3 - "$@" <<'PY'
import struct, sys

def read(path):
    with open(path, "rb") as f:
        data = f.read()
    bo = "<" if struct.unpack("<I", data[:4])[0] in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    recs, off = [], 24
    while off + 16 <= len(data):
        _, _, caplen, length = struct.unpack(bo + "IIII", data[off:off + 16])
        recs.append((length, data[off + 16:off + 16 + caplen]))
        off += 16 + caplen
    return recs

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
PY
}
