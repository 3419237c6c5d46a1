#!/usr/bin/env bash
# bench/archive/run.sh [--packets N] [--per-file N] [--reps N]: one conversation read three
# ways from the same store — from the archive tier (the store uploaded into a real Ceph RGW,
# tests/archive/rgw.sh, in the archive's layout, and moved away locally), from the local
# store, and by `tcpdump -r` over the original files — each timed by bench/api/ttfb.py (time
# to first byte and total; medians of --reps runs), with the ratios to the local extract
# and to tcpdump, and the bytes the archive read fetched ÷ the bytes of the blocks its plan
# read and ÷ the store's size. Every answer is checked equal to tcpdump's.
#
# The default store is small (2 streams × 200000 packets, a few hundred MB at most): a
# development figure. The issue's figure wants a store of 10 GB or more: --packets 8500000
# (2 × 8.5 M packets of the mix: 12 GB) takes the generator about 5 min; the RGW keeps
# the objects on the disk (BlueStore on a file, sized to the store).
source "$(dirname "${BASH_SOURCE[0]}")/../../tests/lib/common.sh"
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export LINECAP_SRC=$SRC
LINECAP=${LINECAP:-$SRC/build/src/linecap}
PACKETS=200000 PER_FILE=20000 REPS=3
while (($#)); do
    case $1 in
        --packets) PACKETS=$2; shift 2 ;;
        --per-file) PER_FILE=$2; shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        *) echo "usage: bench/archive/run.sh [--packets N] [--per-file N] [--reps N]" >&2; exit 2 ;;
    esac
done
need_root
need_cmd s3cmd tcpdump python3
[[ -x $LINECAP ]] || fail "no linecap at $LINECAP (ninja -C build src/linecap)"
make_tmpdir
T=$TEST_TMPDIR
# shellcheck source=../../tests/archive/rgw_env.sh
source "$SRC/tests/archive/rgw_env.sh"
T0=1796004600000000000
log "generating 2 streams of $PACKETS packets"
python3 "$SRC/tests/store/make_store.py" --out "$T/store" --per-file "$PER_FILE" \
    --gen-arg=--mix --gen-arg=--both-directions --gen-arg=--flows --gen-arg=2000 \
    --stream "p0:0:1:$T0:1000:$PACKETS" --stream "p0:1:2:$((T0 + 500)):1000:$PACKETS" >"$T/files.txt"
"$LINECAP" index --dir "$T/store" 2>/dev/null || fail "linecap index"
python3 - "$T/store" <<'PY'
import json, os, sys
d = sys.argv[1]
for name in os.listdir(d):
    if name.endswith(".pcap"):
        json.dump({"manifest_version": 1, "file": name, "format": "pcap",
                   "size": os.path.getsize(os.path.join(d, name))}, open(os.path.join(d, name + ".manifest"), "w"))
PY
printf '{"format":1,"appliance":"bench","file_template":"%s","rotate_interval_s":60}\n' \
    '%Y%m%dT%H%M%S.{nsec}Z-{port}-q{queue}' >"$T/linecap-store.json"
store_bytes=$(cat "$T"/store/*.pcap | wc -c)
# Room for the store, its indexes and manifests; on the disk, since memstore takes about
# twice what it holds in RAM.
D=$T/rgw
RGW_DISK_BYTES=$((store_bytes * 5 / 4 + (4 << 30))) start_rgw "$D" >"$T/rgw.log" 2>&1
log "uploading $(wc -l <"$T/files.txt") files, $store_bytes bytes"
s3 put "$T/linecap-store.json" "$T"/store/*.pcap "$T"/store/*.idx "s3://$S3_BUCKET/bench/"
s3 put "$T"/store/*.manifest "s3://$S3_BUCKET/bench/"

first=$(sed -n 1p "$T/files.txt")
eval "$(python3 "$SRC/tests/store/ref_compare.py" sample "$T/store/$first")"
FILTER="host $V4 and host $V4PEER and tcp port $TPORT"
sed "s|^|$T/store/|" "$T/files.txt" | sort >"$T/paths.txt"
ARCHIVE=(--archive "s3://$S3_BUCKET/bench" --endpoint "$S3_ENDPOINT" --credentials "$D/credentials")
TTFB=(python3 "$SRC/bench/api/ttfb.py")

# The archive read: its byte counts once, with -v; the local store moved away meanwhile.
mv "$T/store" "$T/away"
"$LINECAP" extract "${ARCHIVE[@]}" --filter "$FILTER" -v -o "$T/archive.pcap" 2>"$T/v.log" || fail "$(cat "$T/v.log")"
mv "$T/away" "$T/store"
read -r data records < <(sed -n 's/.* \([0-9]*\) bytes of capture data for \([0-9]*\) bytes of records read.*/\1 \2/p' "$T/v.log")

declare -A RUNS
time_path() {  # NAME CMD...: REPS runs; "ttfb total" per line in $T/NAME.times
    local name=$1 i
    shift
    for ((i = 0; i < REPS; i++)); do
        [[ $name != archive ]] || mv "$T/store" "$T/away"
        "${TTFB[@]}" "$T/$name.pcap" "$@" >>"$T/$name.times" || fail "$name: $(cat "$T/$name.pcap.stderr")"
        [[ $name != archive ]] || mv "$T/away" "$T/store"
    done
    RUNS[$name]=1
}
time_path archive "$LINECAP" extract "${ARCHIVE[@]}" --filter "$FILTER" -o -
time_path local "$LINECAP" extract --dir "$T/store" --filter "$FILTER" -o -
time_path tcpdump tcpdump -q -Z root -V "$T/paths.txt" -w - "$FILTER"
python3 "$SRC/tests/store/ref_compare.py" compare "$T/tcpdump.pcap" "$T/archive.pcap" >/dev/null \
    || fail "the archive's answer differs from tcpdump's"
cmp -s "$T/local.pcap" "$T/archive.pcap" || fail "the archive's answer differs from the local one"

python3 - "$T" "$data" "$records" "$store_bytes" "$(uptime | sed 's/.*load average: //')" <<'PY'
import statistics, sys
t, data, records, store, load = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
med = {}
for name in ("archive", "local", "tcpdump"):
    runs = [tuple(map(float, l.split()[:2])) for l in open(f"{t}/{name}.times")]
    med[name] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), len(runs))
print(f"one conversation, store {store / 1e6:.1f} MB, load average {load}")
print("| path | ttfb s | total s | total ÷ local | total ÷ tcpdump |")
print("| --- | --- | --- | --- | --- |")
for name, (ttfb, total, n) in med.items():
    print(f"| {name} | {ttfb:.3f} | {total:.3f} | {total / med['local'][1]:.2f} | {total / med['tcpdump'][1]:.3f} |")
print(f"archive: fetched {data} bytes of capture data for {records} bytes of blocks the plan read: "
      f"{data / records:.3f}; ÷ the store's size: {data / store:.5f}")
PY
