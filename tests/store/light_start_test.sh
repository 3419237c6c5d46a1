#!/usr/bin/env bash
# `linecap` over local files starts without libcurl (src/util/curl_library.hpp): linked,
# its 30 libraries were read and relocated by every start, a fifth of a cold query
# (bench/store/README.md). So:
#   - the binary does not link libcurl (no NEEDED entry);
#   - `linecap index` and `linecap extract` over a local store never load it, and the
#     extract's answer is tcpdump's;
#   - the fan-out client loads it when it is used: `extract --remote` at a port where
#     nothing listens loads libcurl and names the appliance it could not reach.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_cmd readelf tcpdump
need_linecap
make_tmpdir
T=$TEST_TMPDIR
STORE=$T/store
T0=1796004600000000000

readelf -d "$LINECAP" >"$T/dynamic.txt" || fail "readelf -d $LINECAP failed"
grep -q NEEDED "$T/dynamic.txt" || fail "readelf shows no NEEDED entry at all: $(head -c 400 "$T/dynamic.txt")"
! grep -q 'NEEDED.*libcurl' "$T/dynamic.txt" || fail "linecap links libcurl: $(grep NEEDED "$T/dynamic.txt")"

# loaded LOG: the shared objects the dynamic loader opened (LD_DEBUG=files) in LOG.
loaded() { sed -n 's/.*file=\([^ ]*\) \[0\];  needed by.*/\1/p; s/.*file=\([^ ]*\) \[0\];  dynamically loaded by.*/\1/p' "$1"; }

python3 "$LINECAP_SRC/tests/store/make_store.py" --out "$STORE" --per-file 400 --gen-arg=--mix \
    --stream "p0:0:7:$T0:1000:1200" >"$T/files.txt"
LD_DEBUG=files LD_DEBUG_OUTPUT=$T/index.ld "$LINECAP" index --dir "$STORE" 2>"$T/index.err" \
    || fail "linecap index: $(cat "$T/index.err")"
filter="tcp and port 443"
LD_DEBUG=files LD_DEBUG_OUTPUT=$T/extract.ld "$LINECAP" extract --dir "$STORE" --filter "$filter" \
    -o "$T/got.pcap" 2>"$T/extract.err" || fail "linecap extract: $(cat "$T/extract.err")"
cat "$T"/index.ld.* >"$T/index.ld"
cat "$T"/extract.ld.* >"$T/extract.ld"
loaded "$T/extract.ld" | grep -q 'libpcap' || fail "the loader log names no libpcap; LD_DEBUG=files gave: $(head -c 400 "$T/extract.ld")"
for run in index extract; do
    ! loaded "$T/$run.ld" | grep -q libcurl || fail "linecap $run over a local store loaded libcurl"
done
want=0
while read -r f; do
    want=$((want + $(tcpdump -r "$STORE/$f" "$filter" 2>/dev/null | wc -l)))
done <"$T/files.txt"
got=$(tcpdump -r "$T/got.pcap" 2>/dev/null | wc -l)
((want > 0 && got == want)) || fail "extract wrote $got packets, tcpdump -r finds $want"
log "index and extract over a local store: libcurl not loaded; $got packets, as tcpdump -r"

port=$(free_tcp_port)
rc=0
LD_DEBUG=files LD_DEBUG_OUTPUT=$T/remote.ld timeout 30 "$LINECAP" extract --remote "http://127.0.0.1:$port" \
    --filter "$filter" -o "$T/remote.pcap" 2>"$T/remote.err" || rc=$?
cat "$T"/remote.ld.* >"$T/remote.ld"
((rc != 0)) || fail "extract --remote from a port where nothing listens succeeded"
loaded "$T/remote.ld" | grep -q libcurl || fail "extract --remote did not load libcurl: $(loaded "$T/remote.ld" | tr '\n' ' ')"
grep -q "127.0.0.1:$port" "$T/remote.err" || fail "the unreachable appliance is not named: $(cat "$T/remote.err")"
log "extract --remote loads libcurl when it needs it (exit $rc): $(head -1 "$T/remote.err")"
