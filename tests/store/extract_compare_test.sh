#!/usr/bin/env bash
# `linecap extract` returns exactly what tcpdump returns with the same filter over all
# files merged (mergecap), cut to the same [from, to) at nanosecond precision by a small
# reference (tests/store/ref_compare.py): 21 queries (IPv4, IPv6, VLAN-tagged, ARP/ICMP,
# conversations, ranges inside files and across file boundaries, empty results, both time
# syntaxes), each with the index, without it (--no-index), and with half the indexes
# missing. Synthetic store: 4 streams on 2 ports cut into files named by the default
# template (tests/store/make_store.py over tests/tools/gen_pcap.py). Then the store is
# compressed (`linecap compress`) and the queries run again, with and without the index.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_cmd tcpdump mergecap python3 zstd
need_linecap
make_tmpdir
T=$TEST_TMPDIR
REF="python3 $LINECAP_SRC/tests/store/ref_compare.py"
STORE=$T/store
T0=1796004600000000000  # 2026-11-30T02:10:00Z

# Unique timestamps across streams (offsets 0/250/500/750 ns, step 1000 ns), so the merge
# order is fully determined and mergecap's order equals linecap's.
python3 "$LINECAP_SRC/tests/store/make_store.py" --out "$STORE" --per-file 700 \
    --gen-arg=--mix --gen-arg=--both-directions --gen-arg=--flows --gen-arg=200 \
    --stream "p0:0:1:$T0:1000:3000" \
    --stream "p0:1:2:$((T0 + 250)):1000:3000" \
    --stream "p1:0:3:$((T0 + 500)):1000:3000:--ipv6,--vlan,--proto,udp,--both-directions,--flows,50" \
    --stream "p1:1:4:$((T0 + 750)):1000:2500:--mix,--jumbo,--tcp-flags,--both-directions" >"$T/files.txt"
nfiles=$(wc -l <"$T/files.txt")
((nfiles >= 16)) || fail "expected at least 16 files, got $nfiles"
mergecap -F nsecpcap -w "$T/all.pcap" "$STORE"/*.pcap
eval "$($REF sample "$T/all.pcap")"
log "store: $nfiles files; sample V4=$V4 V4PEER=$V4PEER TPORT=$TPORT V6=$V6 V6VLAN=$V6VLAN"

# A file boundary of stream p0/q0: the second file's first packet.
second=$(sed -n 2p "$T/files.txt")
B=$($REF sample "$STORE/$second" | sed -n 's/^TS_FIRST=//p')
secs() { printf '%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }

# name | from | to | filter   (from/to: "-" = unbounded; the reference gets nanoseconds)
queries=(
    "all|-|-|"
    "tcp-80|-|-|tcp port 80"
    "udp-inside-files|$((T0 + 123457))|$((T0 + 2345678))|udp"
    "across-boundary|$((B - 3000))|$((B + 3001))|"
    "boundary-exact|$B|$((B + 1))|"
    "ipv6|$((T0 + 500000))|$((T0 + 2500000))|ip6"
    "vlan-udp|-|-|vlan and udp"
    "vlan-ip6-udp-port|-|-|vlan and ip6 and udp port 80"
    "host-v4|-|-|host $V4"
    "conversation|-|-|host $V4 and host $V4PEER and tcp port $TPORT"
    "host-v6|-|-|ip6 host $V6"
    "vlan-host-v6|$((T0 + 100000))|-|vlan and ip6 host $V6VLAN"
    "arp-icmp|-|-|arp or icmp or icmp6"
    "not-tcp-cut|$TS_MID|$((TS_MID + 700000))|not tcp"
    "empty-filter-result|-|-|host 203.0.113.99"
    "empty-range|$TS_MID|$TS_MID|"
    "before-store|$((T0 - 5000000000))|$((T0 - 1))|"
    "after-store|$((TS_LAST + 1))|$((TS_LAST + 5000000000))|"
    "one-packet|$TS_STEP_PKT|$((TS_STEP_PKT + 1))|"
    "port-or|$((T0 + 1000000))|-|port 443 or port 8080"
    "jumbo|-|-|greater 1515 and tcp"
)

# Time arguments in both syntaxes, alternating.
time_arg() {  # NS INDEX
    local ns=$1
    if (($2 % 2)); then
        secs "$ns"
    else
        python3 -c "import sys,time; ns=int(sys.argv[1]); print(time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(ns // 10**9 + 3600)) + '.%09d+01:00' % (ns % 10**9))" "$ns"
    fi
}

run_queries() {  # MODE: index | noindex | partial
    local mode=$1 i=0 q name from to filter args
    for q in "${queries[@]}"; do
        IFS='|' read -r name from to filter <<<"$q"
        args=(extract --dir "$STORE" -o "$T/got.pcap")
        [[ $from == - ]] || args+=(--from "$(time_arg "$from" "$i")")
        [[ $to == - ]] || args+=(--to "$(time_arg "$to" "$i")")
        [[ -z $filter ]] || args+=(--filter "$filter")
        [[ $mode != noindex ]] || args+=(--no-index)
        local rc=0
        "$LINECAP" "${args[@]}" 2>"$T/stderr" || rc=$?
        ((rc == 0)) || fail "$mode/$name: linecap exited $rc: $(cat "$T/stderr")"
        case $mode in
            index | noindex) [[ ! -s $T/stderr ]] || fail "$mode/$name: unexpected stderr: $(cat "$T/stderr")" ;;
            partial) ! grep -v ': no index; scanning the file$' "$T/stderr" | grep -q . \
                || fail "partial/$name: unexpected stderr: $(cat "$T/stderr")" ;;
        esac
        # tcpdump's answer is the same in every mode: computed once per query.
        if [[ ! -f $T/want-$name.pcap ]]; then
            if [[ -n $filter ]]; then
                tcpdump --time-stamp-precision=nano -r "$T/all.pcap" -w "$T/filtered.pcap" "$filter" 2>/dev/null
            else
                cp "$T/all.pcap" "$T/filtered.pcap"
            fi
            $REF cut "$T/filtered.pcap" "$from" "$to" "$T/want-$name.pcap"
        fi
        $REF compare "$T/want-$name.pcap" "$T/got.pcap" >"$T/cmp" || fail "$mode/$name: $(cat "$T/cmp")"
        log "$mode/$name: $(cat "$T/cmp")"
        i=$((i + 1))
    done
}

"$LINECAP" index --dir "$STORE" 2>"$T/index.log" || fail "linecap index failed: $(cat "$T/index.log")"
grep -q "^linecap: $nfiles indexed, 0 up to date, 0 failed" "$T/index.log" || fail "index: $(cat "$T/index.log")"
run_queries index
run_queries noindex
# Half the indexes gone: those files are scanned, with a warning naming each.
n=0
for f in "$STORE"/*.pcap.idx; do
    ((n++ % 2)) || rm -- "$f"
done
run_queries partial
grep -q "warning: $STORE/.*\.pcap: no index; scanning the file" "$T/stderr" || fail "no warning for missing indexes"

# stdout output equals file output; a pruned query reads a fraction of the blocks.
"$LINECAP" index --dir "$STORE" 2>/dev/null
"$LINECAP" extract --dir "$STORE" --filter "host $V4" -o - >"$T/stdout.pcap" 2>/dev/null
"$LINECAP" extract --dir "$STORE" --filter "host $V4" -o "$T/file.pcap" -v 2>"$T/v.log"
cmp -s "$T/stdout.pcap" "$T/file.pcap" || fail "-o - differs from -o FILE"
read -r got total < <(sed -n 's/.*indexed (\([0-9]*\) of \([0-9]*\) blocks read.*/\1 \2/p' "$T/v.log")
[[ -n ${total:-} ]] && ((got < total)) || fail "expected pruning for 'host $V4': $(cat "$T/v.log")"

# Compressed (output.compress, here `linecap compress`): every file replaced by NAME.zst,
# zstd's seekable format with frames at the index blocks. `zstd -d` gives back the exact
# bytes, and the same queries (with and without the index) give what tcpdump gives over
# the originals. The compressor needs a manifest (the pcap's SHA-256 it checks the
# compressed copy against): written here as the daemon would.
mkdir "$T/orig"
cp -p "$STORE"/*.pcap "$T/orig/"
python3 - "$STORE" <<'PY'
import hashlib, json, os, struct, sys
d = sys.argv[1]
for name in sorted(os.listdir(d)):
    if not name.endswith(".pcap"):
        continue
    data = open(os.path.join(d, name), "rb").read()
    ts = []
    pos = 24
    while pos + 16 <= len(data):
        sec, frac, caplen, _ = struct.unpack_from("<IIII", data, pos)
        ts.append(sec * 10**9 + frac)
        pos += 16 + caplen
    m = {"manifest_version": 1, "file": name, "format": "pcap", "size": len(data),
         "sha256": hashlib.sha256(data).hexdigest(), "packets": len(ts),
         "first_ns": ts[0] if ts else 0, "last_ns": ts[-1] if ts else 0}
    with open(os.path.join(d, name + ".manifest"), "w") as f:
        json.dump(m, f)
PY
"$LINECAP" compress --dir "$STORE" -v 2>"$T/compress.log" || fail "linecap compress: $(cat "$T/compress.log")"
grep -q "^linecap: $nfiles compressed, 0 already compressed, 0 without manifest, 0 failed" "$T/compress.log" \
    || fail "compress: $(cat "$T/compress.log")"
(($(grep -c ' at index blocks' "$T/compress.log") == nfiles)) || fail "frames not at index blocks: $(cat "$T/compress.log")"
shopt -s nullglob
plain=("$STORE"/*.pcap)
((${#plain[@]} == 0)) || fail "plain files left after compression: ${plain[*]}"
for f in "$T"/orig/*.pcap; do
    z=$STORE/$(basename "$f").zst
    zstd -q -d -c "$z" | cmp -s - "$f" || fail "zstd -d $z differs from the original"
done
"$LINECAP" index --dir "$STORE" 2>"$T/index.log" || fail "index over compressed files: $(cat "$T/index.log")"
grep -q "^linecap: 0 indexed, $nfiles up to date, 0 failed; 0 stale" "$T/index.log" \
    || fail "indexes not current after compression: $(cat "$T/index.log")"
run_queries index
run_queries noindex
log "compressed: $(tail -1 "$T/compress.log" | sed 's/^linecap: //'); zstd -d round-trips every file"
log "OK: ${#queries[@]} queries x 3 modes (and compressed x 2) identical to tcpdump; host query read $got of $total blocks"
