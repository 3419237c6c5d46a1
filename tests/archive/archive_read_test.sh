#!/usr/bin/env bash
# `linecap extract/stats --archive`: the archive tier read in place, against a real Ceph RGW
# (tests/archive/rgw.sh). The store tests' query set (tests/store/query_set.sh) is written
# into the bucket in the archive's layout (src/archive/object_layout.hpp) with s3cmd, as an
# archiver would leave it, then:
#  1. every query over the archive alone (the local files deleted) is byte-identical to the
#     same query over the local store and equal to tcpdump -r over the original files;
#     `stats --archive` says what `stats --dir` says; one conversation fetches at most 1.2
#     times the bytes of the blocks its plan needed;
#  2. the same store compressed (`linecap compress`, .pcap.zst objects): every query again;
#  3. a bucket-only URL spans both appliances' prefixes: one answer holding each packet of
#     both, every pcapng interface named after its appliance;
#  4. --dir with --archive is one store: half the files local, the rest only archived;
#  5. missing index objects: still exact (those files scanned); a damaged index object:
#     named, the file scanned, still exact; a damaged zstd frame, and a flipped byte in a
#     plain object's block (caught by the index's block CRC-32C, index version 2): an error
#     naming the file, exit 1, no packet that is not in the answer;
#  6. `linecap serve --archive`: the API's answer is extract's, its /metrics counts the
#     bytes fetched (linecap_archive_read_bytes_total);
#  7. refusals, one line each and nothing written to -o: a bad URL (64), an endpoint that
#     does not answer, credentials the store refuses, a missing bucket, a prefix holding no
#     archive (1).
TEST_NAME=archive-read
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_root
need_cmd s3cmd tcpdump mergecap tshark python3
LINECAP=${LINECAP:-$LINECAP_BUILD/src/linecap}
[[ -x $LINECAP ]] || skip "linecap binary not found at $LINECAP"
make_tmpdir
T=$TEST_TMPDIR
# shellcheck source=rgw_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/rgw_env.sh"
D=$T/rgw
start_rgw "$D"
BUCKET=s3://$S3_BUCKET
ACCESS=(--endpoint "$S3_ENDPOINT" --credentials "$D/credentials" --region "$S3_REGION")

# shellcheck source=../store/query_set.sh
source "$LINECAP_SRC/tests/store/query_set.sh"
make_query_store "$T/store"
"$LINECAP" index --dir "$T/store" 2>/dev/null || fail "linecap index failed"
write_manifests "$T/store"

# The archive of one appliance under PREFIX, as its archiver leaves it: the description,
# then each file's capture object, its index and, last, its manifest.
archive_store() {  # STORE PREFIX APPLIANCE
    printf '{"format":1,"appliance":"%s","file_template":"%s","rotate_interval_s":60}\n' "$3" \
        '%Y%m%dT%H%M%S.{nsec}Z-{port}-q{queue}' >"$T/linecap-store.json"
    s3 put "$T/linecap-store.json" "$BUCKET/$2/"
    local captures
    mapfile -t captures < <(find "$1" -maxdepth 1 \( -name '*.pcap' -o -name '*.pcap.zst' \) | sort)
    ((${#captures[@]} > 0)) || fail "nothing to archive in $1"
    s3 put "${captures[@]}" "$BUCKET/$2/"
    s3 put "$1"/*.idx "$BUCKET/$2/"
    s3 put "$1"/*.manifest "$BUCKET/$2/"
}

# Runs every query over the archive at URL, each compared, byte for byte, with the answer
# over the local store ($T/local-NAME.pcap) and, unless REFERENCE is "no" (an earlier run
# found the local answers equal to it), with tcpdump's.
run_queries() {  # LABEL URL [REFERENCE]
    local label=$1 url=$2 reference=${3:-yes} i=0 q name from to filter rc
    for q in "${queries[@]}"; do
        IFS='|' read -r name from to filter <<<"$q"
        query_args "$from" "$to" "$filter" "$i"
        rc=0
        "$LINECAP" extract --archive "$url" "${ACCESS[@]}" -o "$T/got.pcap" "${QARGS[@]}" 2>"$T/stderr" || rc=$?
        ((rc == 0)) || fail "$label/$name: linecap exited $rc: $(cat "$T/stderr")"
        [[ ! -s $T/stderr ]] || fail "$label/$name: unexpected stderr: $(cat "$T/stderr")"
        if [[ $reference == yes ]]; then
            want_pcap "$name" "$from" "$to" "$filter"
            $REF compare "$T/want-$name.pcap" "$T/got.pcap" >"$T/cmp" || fail "$label/$name: $(cat "$T/cmp")"
        fi
        cmp -s "$T/local-$name.pcap" "$T/got.pcap" || fail "$label/$name: differs from the local store's answer"
        i=$((i + 1))
    done
    log "$label: ${#queries[@]} queries over $url equal, byte for byte, the local answers (equal to tcpdump -r)"
}

# 1. Plain files, the local copy gone (moved away while the archive is queried).
archive_store "$T/store" sensor-a sensor-a
i=0
for q in "${queries[@]}"; do  # the local answers first
    IFS='|' read -r name from to filter <<<"$q"
    query_args "$from" "$to" "$filter" $((i++))
    "$LINECAP" extract --dir "$T/store" -o "$T/local-$name.pcap" "${QARGS[@]}" 2>"$T/stderr" \
        || fail "local $name: $(cat "$T/stderr")"
done
"$LINECAP" stats --dir "$T/store" >"$T/stats-local.txt" 2>&1 || fail "stats --dir: $(cat "$T/stats-local.txt")"
mv "$T/store" "$T/away"
run_queries plain "$BUCKET/sensor-a"
"$LINECAP" stats --archive "$BUCKET/sensor-a" "${ACCESS[@]}" >"$T/stats-archive.txt" 2>&1 \
    || fail "stats --archive: $(cat "$T/stats-archive.txt")"
diff <(tail -n +2 "$T/stats-local.txt") <(tail -n +2 "$T/stats-archive.txt") >"$T/stats.diff" \
    || fail "stats --archive differs from stats --dir: $(cat "$T/stats.diff")"
grep -q "^store *$BUCKET/sensor-a$" "$T/stats-archive.txt" || fail "stats names the archive: $(head -1 "$T/stats-archive.txt")"
mv "$T/away" "$T/store"

# One conversation: bytes fetched for capture data over the bytes of the blocks read.
"$LINECAP" extract --archive "$BUCKET/sensor-a" "${ACCESS[@]}" -v -o "$T/conv.pcap" \
    --filter "host $V4 and host $V4PEER and tcp port $TPORT" 2>"$T/conv.log" || fail "conversation: $(cat "$T/conv.log")"
read -r data records < <(sed -n 's/.* \([0-9]*\) bytes of capture data for \([0-9]*\) bytes of records read.*/\1 \2/p' "$T/conv.log")
[[ -n ${records:-} ]] && ((records > 0)) || fail "no byte counts: $(cat "$T/conv.log")"
ratio=$(python3 -c "print(f'{$data / $records:.3f}')")
python3 -c "import sys; sys.exit(0 if $data <= 1.2 * $records else 1)" \
    || fail "one conversation fetched $data bytes for $records bytes of blocks (ratio $ratio > 1.2)"
log "one conversation: fetched $data bytes of capture data for $records bytes of blocks read: ratio $ratio;" \
    "$(sed -n 's/^linecap: archive: //p' "$T/conv.log")"

# 2. Compressed files (.pcap.zst objects, frames at the index blocks).
cp -a "$T/store" "$T/zstore"
"$LINECAP" compress --dir "$T/zstore" 2>"$T/compress.log" || fail "linecap compress: $(cat "$T/compress.log")"
ls "$T/zstore"/*.pcap >/dev/null 2>&1 && fail "plain files left after compression"
archive_store "$T/zstore" site/sensor-z sensor-z
run_queries compressed "$BUCKET/site/sensor-z" no

# 3. The whole bucket: both appliances, each packet of both, interfaces named after them.
"$LINECAP" extract --archive "$BUCKET" "${ACCESS[@]}" --format pcapng -o "$T/bucket.pcapng" 2>"$T/stderr" \
    || fail "bucket-wide extract: $(cat "$T/stderr")"
all=$(tshark -r "$T/all.pcap" 2>/dev/null | wc -l)
tshark -r "$T/bucket.pcapng" -T fields -e frame.interface_name 2>/dev/null | sort | uniq -c >"$T/ifaces"
for appliance in sensor-a sensor-z; do
    n=$(awk -v a="$appliance" '$2 == a { s += $1 } END { print s + 0 }' "$T/ifaces")
    ((n == all)) || fail "bucket-wide: $n packets named $appliance, expected $all: $(cat "$T/ifaces")"
done
grep -q ' sensor-z p1:0$' "$T/ifaces" || fail "bucket-wide: no interface 'sensor-z p1:0': $(cat "$T/ifaces")"
"$LINECAP" extract --archive "$BUCKET" "${ACCESS[@]}" -o "$T/bucket.pcap" 2>/dev/null || fail "bucket-wide pcap"
python3 - "$T/all.pcap" "$T/bucket.pcap" <<'PY' || fail "bucket-wide: not every packet twice, in time order"
import sys
from linecap_harness import pcap
want = sorted((r.ts_ns, bytes(r.data)) for r in pcap.Capture(sys.argv[1]) for _ in range(2))
got = [(r.ts_ns, bytes(r.data)) for r in pcap.Capture(sys.argv[2])]
sys.exit(0 if sorted(got) == want and [t for t, _ in got] == sorted(t for t, _ in got) else 1)
PY
log "bucket-wide: $((2 * all)) packets of sensor-a and sensor-z merged in time order, named per appliance"

# 4. Local files and the archive as one store: every other file local only, the rest archived.
mkdir "$T/half"
n=0
for f in "$T"/store/*.pcap; do
    ((n++ % 2)) || cp -p "$f" "$f.idx" "$f.manifest" "$T/half/"
done
"$LINECAP" index --dir "$T/half" 2>/dev/null || fail "linecap index over the copies"
"$LINECAP" extract --dir "$T/half" --archive "$BUCKET/sensor-a" "${ACCESS[@]}" -v -o "$T/union.pcap" 2>"$T/union.log" \
    || fail "--dir with --archive: $(cat "$T/union.log")"
$REF compare "$T/want-all.pcap" "$T/union.pcap" >"$T/cmp" || fail "--dir with --archive: $(cat "$T/cmp")"
read -r fetched < <(sed -n 's/.* \([0-9]*\) bytes of capture data.*/\1/p' "$T/union.log")
local_bytes=$(cat "$T"/half/*.pcap | wc -c)
archive_bytes=$(cat "$T"/store/*.pcap | wc -c)
((fetched < archive_bytes - local_bytes + 16384 * nfiles)) \
    || fail "--dir with --archive fetched $fetched bytes: the local files were read from the archive too"
log "--dir with --archive: one store; $fetched bytes fetched for $((archive_bytes - local_bytes)) archived-only bytes"

# 5. Missing indexes; a damaged index; a damaged zstd frame.
mapfile -t names <"$T/files.txt"
s3 del "$BUCKET/sensor-a/${names[0]}.idx" "$BUCKET/sensor-a/${names[3]}.idx"
python3 - "$T/store/${names[1]}.idx" "$T/bad.idx" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[len(b) // 2] ^= 0xFF
open(sys.argv[2], "wb").write(b)
PY
s3 put "$T/bad.idx" "$BUCKET/sensor-a/${names[1]}.idx"
for name in all conversation host-v6 across-boundary; do
    q=$(printf '%s\n' "${queries[@]}" | grep "^$name|")
    IFS='|' read -r name from to filter <<<"$q"
    query_args "$from" "$to" "$filter" 1
    rc=0
    "$LINECAP" extract --archive "$BUCKET/sensor-a" "${ACCESS[@]}" -o "$T/got.pcap" "${QARGS[@]}" 2>"$T/stderr" || rc=$?
    ((rc == 0)) || fail "missing/damaged index, $name: exit $rc: $(cat "$T/stderr")"
    $REF compare "$T/want-$name.pcap" "$T/got.pcap" >"$T/cmp" || fail "missing/damaged index, $name: $(cat "$T/cmp")"
done
"$LINECAP" extract --archive "$BUCKET/sensor-a" "${ACCESS[@]}" -o "$T/got.pcap" 2>"$T/stderr"
grep -q "warning: $BUCKET/sensor-a/${names[0]}: no index; scanning the file" "$T/stderr" \
    || fail "no warning for a missing index object: $(cat "$T/stderr")"
grep -q "warning: $BUCKET/sensor-a/${names[1]}: index unusable ($BUCKET/sensor-a/${names[1]}.idx: checksum mismatch" \
    "$T/stderr" || fail "the damaged index object is not named: $(cat "$T/stderr")"
log "missing and damaged index objects: still exact (scanned), each named"

# damaged_object WHAT ORIGINAL URL NAME OFFSET XOR: the object NAME under URL replaced by
# ORIGINAL with one byte changed; then every packet over URL: exit 1, an error naming the
# object, only packets of the answer and fewer.
damaged_object() {
    local what=$1 original=$2 url=$3 name=$4 rc=0
    python3 - "$original" "$T/bad.obj" "$5" "$6" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[int(sys.argv[3])] ^= int(sys.argv[4], 0)
open(sys.argv[2], "wb").write(b)
PY
    s3 put "$T/bad.obj" "$url/$name"
    "$LINECAP" extract --archive "$url" "${ACCESS[@]}" -o "$T/damaged.pcap" 2>"$T/stderr" || rc=$?
    ((rc == 1)) || fail "$what: exit $rc, expected 1: $(cat "$T/stderr")"
    grep -q "error: $url/${name%.zst}: " "$T/stderr" || fail "$what: the damaged object is not named: $(cat "$T/stderr")"
    python3 - "$T/want-all.pcap" "$T/damaged.pcap" <<'PY' || fail "$what: packets that are not in the answer"
import sys
from collections import Counter
from linecap_harness import pcap
want = Counter((r.ts_ns, bytes(r.data)) for r in pcap.Capture(sys.argv[1]))
got = Counter((r.ts_ns, bytes(r.data)) for r in pcap.Capture(sys.argv[2]))
sys.exit(0 if not got - want and sum(got.values()) < sum(want.values()) else 1)
PY
    log "$what: $(grep -m1 error: "$T/stderr")"
}
z=${names[2]}.zst
damaged_object "a damaged zstd frame" "$T/zstore/$z" "$BUCKET/site/sensor-z" "$z" 2000 0x5A  # inside the first frame
# A flipped byte in a plain object whose index is intact: its block fails the index's
# CRC-32C when it is fetched; nothing of that block is returned.
damaged_object "a damaged plain block" "$T/store/${names[2]}" "$BUCKET/sensor-a" "${names[2]}" 2000 1  # block 0
s3 put "$T/store/${names[2]}" "$BUCKET/sensor-a/${names[2]}"  # mended

# 6. `linecap serve --archive`: the API answers over the archive as extract does, and its
# /metrics counts the bytes fetched.
# shellcheck source=../api/api_lib.sh
source "$LINECAP_SRC/tests/api/api_lib.sh"
PORT=$(free_tcp_port)
api_config "$T/api.yaml" "$T/nowhere" "127.0.0.1:$PORT" "$T/audit.log" "unauthenticated: loopback"
start_serve "$T/api.yaml" "" --archive "$BUCKET/site/sensor-z" "${ACCESS[@]}"
grep -q "listening on http://127.0.0.1:$PORT (store $BUCKET/site/sensor-z," "$SERVE_LOG" || fail "serve: $(cat "$SERVE_LOG")"
s3 put "$T/zstore/$z" "$BUCKET/site/sensor-z/$z"  # the damaged frame mended
curl -sf -o "$T/api.pcap" -G "http://127.0.0.1:$PORT/api/v1/packets" \
    --data-urlencode "filter=host $V4 and host $V4PEER and tcp port $TPORT" || fail "serve: /api/v1/packets failed"
cmp -s "$T/local-conversation.pcap" "$T/api.pcap" || fail "serve --archive: the API's answer differs from extract's"
curl -sf "http://127.0.0.1:$PORT/metrics" >"$T/api-metrics.txt" || fail "serve: /metrics failed"
fetched=$(python3 -m linecap_harness.prometheus sum "$T/api-metrics.txt" linecap_archive_read_bytes_total kind=data)
((${fetched%.*} > 0)) || fail "serve: no capture bytes counted: $(cat "$T/api-metrics.txt")"
log "serve --archive: the conversation as extract gives it; linecap_archive_read_bytes_total{kind=\"data\"} $fetched"

# 7. Refusals: one line on stderr, the exit status, nothing at -o.
refused() {  # WANT_RC WHAT ARGS...
    local want=$1 what=$2 rc=0
    shift 2
    "$LINECAP" extract "$@" -o "$T/refused.pcap" 2>"$T/stderr" || rc=$?
    ((rc == want)) || fail "$what: exit $rc, expected $want: $(cat "$T/stderr")"
    (($(wc -l <"$T/stderr") == 1)) || fail "$what: not one line: $(cat "$T/stderr")"
    [[ ! -e $T/refused.pcap ]] || fail "$what: $T/refused.pcap written"
    log "$what: $(cat "$T/stderr")"
}
refused 64 "bad URL" --archive "http://$S3_BUCKET/sensor-a" "${ACCESS[@]}"
refused 1 "endpoint down" --archive "$BUCKET/sensor-a" --endpoint "http://127.0.0.1:$(free_tcp_port)" \
    --credentials "$D/credentials"
sed 's/^\(aws_secret_access_key *= *\).*/\1wrong-secret/' "$D/credentials" >"$T/wrong-credentials"
chmod 600 "$T/wrong-credentials"
refused 1 "wrong secret" --archive "$BUCKET/sensor-a" --endpoint "$S3_ENDPOINT" --credentials "$T/wrong-credentials"
refused 1 "missing bucket" --archive "s3://no-such-bucket/sensor-a" "${ACCESS[@]}"
refused 1 "no archive at the prefix" --archive "$BUCKET/nobody" "${ACCESS[@]}"
log "ok"
