# shellcheck shell=bash
# tests/filter/filter_lib.sh: helpers shared by the capture-filter integration tests.
# Source after tests/lib/common.sh.

CRAFT_PCAP="$LINECAP_SRC/tests/filter/craft_pcap.py"

# craft_pcap ARGS...: tests/filter/craft_pcap.py (edge-case frames with known addresses).
craft_pcap() { python3 "$CRAFT_PCAP" "$@"; }

# records FILE_OR_DIR...: total number of complete pcap records in the files, counting a
# directory's hidden in-progress files (.*.part) too and ignoring a partly written last
# record. For polling while the daemon writes: wait_for "(( \$(records DIR) >= N ))".
records() {
    python3 - "$@" <<'PY'
import os, struct, sys
total = 0
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
for arg in sys.argv[1:]:
    if os.path.isdir(arg):
        for name in os.listdir(arg):
            if name.endswith(".pcap") or name.endswith(".pcap.part"):
                total += count(os.path.join(arg, name))
    else:
        total += count(arg)
print(total)
PY
}

# cat_pcaps OUT IN...: OUT = the records of the IN files one after the other (nanosecond
# pcap, the first file's header); no IN files: an empty capture.
cat_pcaps() {
    python3 - "$@" <<'PY'
import struct, sys
out, ins = sys.argv[1], sys.argv[2:]
with open(out, "wb") as o:
    header = None
    body = []
    for path in ins:
        with open(path, "rb") as f:
            data = f.read()
        magic = struct.unpack("<I", data[:4])[0]
        if magic != 0xA1B23C4D:
            sys.exit(f"cat_pcaps: {path}: not a little-endian nanosecond pcap")
        header = header or data[:24]
        body.append(data[24:])
    o.write(header or struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1))
    for b in body:
        o.write(b)
PY
}

# stream_output OUTDIR PORT QUEUE RESULT: RESULT = the finished files of (PORT, QUEUE) in
# OUTDIR, in name (= time) order, concatenated; prints how many files there were.
stream_output() {
    local dir=$1 port=$2 queue=$3 result=$4 files
    shopt -s nullglob
    files=("$dir"/*-"$port"-q"$queue".pcap)
    shopt -u nullglob
    cat_pcaps "$result" "${files[@]}"
    echo "${#files[@]}"
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
