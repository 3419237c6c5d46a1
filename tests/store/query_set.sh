# The store tests' query set, sourced by tests/store/extract_compare_test.sh and
# tests/archive/archive_read_test.sh: a synthetic store (4 streams on 2 ports cut into
# files named by the default template: tests/store/make_store.py over
# tests/tools/gen_pcap.py), 21 queries over it (IPv4, IPv6, VLAN-tagged, ARP/ICMP,
# conversations, ranges inside files and across file boundaries, empty results, both time
# syntaxes) and tcpdump's answer to each, cut to [from, to) at nanosecond precision by
# tests/store/ref_compare.py. Needs $T (a directory of the test's) and $LINECAP_SRC.
REF="python3 $LINECAP_SRC/tests/store/ref_compare.py"
T0=1796004600000000000  # 2026-11-30T02:10:00Z

# Sets nfiles, the sample (V4, V4PEER, TPORT, V6, V6VLAN, TS_*), B and the queries.
make_query_store() {  # STORE: the store, $T/files.txt its files, $T/all.pcap all of them merged
    local STORE=$1
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
    define_queries
}

secs() { printf '%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }

# queries: name | from | to | filter   (from/to: "-" = unbounded; the reference gets
# nanoseconds). After make_query_store: they use its sample.
define_queries() {
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
}

# Time arguments in both syntaxes, alternating.
time_arg() {  # NS INDEX
    local ns=$1
    if (($2 % 2)); then
        secs "$ns"
    else
        python3 -c "import sys,time; ns=int(sys.argv[1]); print(time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(ns // 10**9 + 3600)) + '.%09d+01:00' % (ns % 10**9))" "$ns"
    fi
}

# QARGS: the query options of query NAME|FROM|TO|FILTER, the Nth of a run (time syntaxes alternate).
query_args() {  # FROM TO FILTER N
    QARGS=()
    [[ $1 == - ]] || QARGS+=(--from "$(time_arg "$1" "$4")")
    [[ $2 == - ]] || QARGS+=(--to "$(time_arg "$2" "$4")")
    [[ -z $3 ]] || QARGS+=(--filter "$3")
}

# tcpdump's answer to a query over $T/all.pcap, computed once: $T/want-NAME.pcap.
want_pcap() {  # NAME FROM TO FILTER
    if [[ ! -f $T/want-$1.pcap ]]; then
        if [[ -n $4 ]]; then
            tcpdump --time-stamp-precision=nano -r "$T/all.pcap" -w "$T/filtered.pcap" "$4" 2>/dev/null
        else
            cp "$T/all.pcap" "$T/filtered.pcap"
        fi
        $REF cut "$T/filtered.pcap" "$2" "$3" "$T/want-$1.pcap"
    fi
}

# A manifest beside every pcap file of STORE, as the daemon would write it (the
# compressor checks the compressed copy against its SHA-256; an archive counts a file
# only with one).
write_manifests() {  # STORE
    python3 - "$1" <<'PY'
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
}
