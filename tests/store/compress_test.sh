#!/usr/bin/env bash
# output.compress end to end with the real linecapd:
#  1. net_pcap replays a generated mix into two queues; the daemon rotates 1 MB files,
#     indexes them, and its background compressor replaces every finished file by
#     NAME.pcap.zst while capture runs (output.compress, after: 0s).
#  2. A crash mid-compression is planted (a compressed file decompressed back beside its
#     .zst with `zstd -d`, and a hidden temporary of a compression): at the next start
#     recovery keeps the plain file and removes the rest, and the compressor compresses
#     it (and the directory's other plain files) again.
#  3. `linecapd verify` checks both hashes of every file; `zstd -d` of every .zst gives
#     exactly the bytes the manifest's SHA-256 was taken of; `linecap extract` over the
#     compressed store (with and without the index) equals tcpdump over the decompressed
#     files; `linecap stats` counts every packet.
#  4. A changed byte in a .zst: `linecapd verify` names it and exits 1.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/store/daemon_queries.sh"
need_root
need_cmd tcpdump mergecap python3 zstd
need_hugepages 256
need_linecapd
need_linecap
make_tmpdir
T=$TEST_TMPDIR
REF="python3 $LINECAP_SRC/tests/store/ref_compare.py"

gen_pcap --count 6000 --mix --both-directions --seed 31 --flows 300 --out "$T/q0.pcap"
gen_pcap --count 5000 --mix --jumbo --both-directions --seed 32 --flows 200 --out "$T/q1.pcap"
gen_pcap --count 20 --mix --seed 33 --out "$T/few.pcap"
mkdir "$T/out"
lcores="0-2"
(($(nproc) >= 3)) || lcores="0@0,1@1,2@1"
config() {  # DEVICE
    # Timestamps from the TSC: both runs replay the same files, with their times they would
    # name the same files.
    write_config "$T/linecap.yaml" "$1" "$T/out" eal.lcores="$lcores" port.name=tap port.rx_queues=2 \
        port.rx_descriptors=1024 port.mtu=9000 capture.timestamps=tsc output.blocks_per_queue=64 \
        output.block_size_kb=256 output.rotate.size_mb=1 output.rotate.interval_s=0 output.compress.enabled=true \
        output.compress.after=0s output.compress.level=3 metrics.enabled=false
}
# Packets in finished files (their manifests) and in the files being written.
packets() {
    python3 - "$T/out" <<'PY'
import json, os, struct, sys
d = sys.argv[1]
n = 0
for name in os.listdir(d):
    p = os.path.join(d, name)
    if name.endswith(".manifest"):
        try:
            n += json.load(open(p))["packets"]
        except (OSError, ValueError, KeyError):
            pass
    elif name.startswith(".") and name.endswith(".part"):
        data = open(p, "rb").read()
        pos = 24
        while pos + 16 <= len(data):
            caplen = struct.unpack_from("<I", data, pos + 8)[0]
            if pos + 16 + caplen > len(data):
                break
            n += 1
            pos += 16 + caplen
print(n)
PY
}
plain_files() { find "$T/out" -maxdepth 1 -name '*.pcap' | wc -l; }
zst_files() { find "$T/out" -maxdepth 1 -name '*.pcap.zst' | wc -l; }

# --- 1. compression while capturing -------------------------------------------------------
config "net_pcap0,rx_pcap=$T/q0.pcap,rx_pcap=$T/q1.pcap"
start_linecapd "$T/linecap.yaml"
wait_for_linecapd "grep -q 'capture running' '$LINECAPD_LOG'" 30 || fail "daemon did not start"
wait_for_linecapd "(( \$(packets) >= 11000 ))" 60 || fail "capture incomplete: $(packets) of 11000 packets"
# Every finished file is compressed in the background (the last one is still being written).
wait_for_linecapd "(( \$(plain_files) == 0 && \$(zst_files) >= 4 ))" 120 \
    || fail "not compressed while capturing: $(ls "$T/out")"
stop_linecapd || fail "linecapd exited $LINECAPD_RC"
grep -E 'compress:.*(error|fail)' "$LINECAPD_LOG" && fail "compressor errors: $(grep compress: "$LINECAPD_LOG")"
log "while capturing: $(zst_files) files compressed, $(plain_files) plain (finished at stop)"

# --- 2. a crash mid-compression, then the next start ---------------------------------------
shopt -s nullglob
zsts=("$T"/out/*.pcap.zst)
victim=${zsts[1]%.zst}
zstd -q -d "${zsts[1]}" -o "$victim" || fail "zstd -d ${zsts[1]}"
printf 'unfinished' >"$T/out/.$(basename "${zsts[2]}").tmp.AbC123"
config "net_pcap0,rx_pcap=$T/few.pcap,rx_pcap=$T/few.pcap"
start_linecapd "$T/linecap.yaml"
# (The log holds both runs: wait for this run's lines, not the first run's.)
wait_for_linecapd "grep -q 'recovery: .*$(basename "${zsts[1]}"): compression interrupted' '$LINECAPD_LOG'" 30 \
    || fail "recovery did not undo the interrupted compression: $(grep recovery: "$LINECAPD_LOG")"
grep -q "recovery: removed stale temporary .*zst.tmp.AbC123" "$LINECAPD_LOG" \
    || fail "recovery did not remove the temporary: $(grep recovery: "$LINECAPD_LOG")"
wait_for_linecapd "(( \$(plain_files) == 0 ))" 120 || fail "plain files not compressed after restart: $(ls "$T/out")"
wait_for_linecapd "(( \$(packets) >= 11040 ))" 60 || fail "second run incomplete: $(packets) of 11040"
stop_linecapd || fail "linecapd exited $LINECAPD_RC on restart"
hidden=$(find "$T/out" -maxdepth 1 -name '.*' ! -name '.' | wc -l)
((hidden == 0)) || fail "hidden files left: $(ls -a "$T/out")"

# --- 3. verify, zstd -d, extract against tcpdump ------------------------------------------
rc=0
"$LINECAPD" verify "$T/out" >"$T/verify.txt" || rc=$?
# The restart in part 2 is a gap by definition (the daemon was not capturing between the two
# runs): verify reports it, one line per stream, and exits 1. Any other finding fails here.
others=$(grep -Ev "^verify |^GAP [^ ]+: the daemon was not capturing between " "$T/verify.txt" || true)
{ ((rc == 0 || rc == 1)) && [[ -z $others ]]; } || fail "verify exited $rc: $(cat "$T/verify.txt")"
nfiles=$(($(plain_files) + $(zst_files)))
grep -q "verify $T/out: $nfiles capture files, $nfiles match their manifests" "$T/verify.txt" \
    || fail "verify: $(cat "$T/verify.txt")"
mkdir "$T/plain"
for z in "$T"/out/*.pcap.zst; do
    zstd -q -d "$z" -o "$T/plain/$(basename "${z%.zst}")" || fail "zstd -d $z"
done
for p in "$T"/out/*.pcap; do cp "$p" "$T/plain/"; done
python3 - "$T/out" "$T/plain" <<'PY' || fail "zstd -d does not give the captured bytes"
import hashlib, json, os, sys
out, plain = sys.argv[1:]
n = 0
for name in os.listdir(plain):
    m = json.load(open(os.path.join(out, name + ".manifest")))
    data = open(os.path.join(plain, name), "rb").read()
    assert hashlib.sha256(data).hexdigest() == m["sha256"] and len(data) == m["size"], name
    if "compressed" in m:
        z = open(os.path.join(out, m["compressed"]["file"]), "rb").read()
        assert hashlib.sha256(z).hexdigest() == m["compressed"]["sha256"], name
        n += 1
assert n >= 4, n
PY
mergecap -F nsecpcap -w "$T/all.pcap" "$T"/plain/*.pcap
eval "$($REF sample "$T/all.pcap")"
"$LINECAP" stats --dir "$T/out" --json >"$T/stats.json" || fail "stats failed"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["packets"] == 11040, s["packets"]' "$T/stats.json" \
    || fail "stats: $(cat "$T/stats.json")"
compare_daemon_queries "$T/out" "$T/all.pcap"

# --- 4. a damaged compressed file ----------------------------------------------------------
z=${zsts[0]}
size=$(stat -c %s "$z")
printf '\xff' | dd of="$z" bs=1 seek=$((size / 2)) conv=notrunc status=none
rc=0
"$LINECAPD" verify "$T/out" >"$T/verify2.txt" || rc=$?
((rc == 1)) || fail "verify over a damaged .zst exited $rc: $(cat "$T/verify2.txt")"
grep -Eq "^(INVALID|MISMATCH) $(basename "$z")" "$T/verify2.txt" || fail "verify did not name $z: $(cat "$T/verify2.txt")"
log "OK: $nfiles files ($(zst_files) compressed) verified, zstd -d exact, extract agrees with tcpdump; damage found: $(grep -E "^(INVALID|MISMATCH)" "$T/verify2.txt" | head -1)"
