# Sourced by the store tests over a store the daemon wrote (linecapd_store_test.sh,
# compress_test.sh). Needs T, LINECAP, REF (ref_compare.py) and what `$REF sample
# ALL_PCAP` sets (TS_MID, V4).
#
# compare_daemon_queries DIR ALL_PCAP: seven queries (everything, tcp port 80, ip6 and
# udp, vlan, a host, from the middle on, arp or icmp from the middle on), each with and
# without the index, must give what tcpdump gives over ALL_PCAP (the daemon's files
# merged), cut to the same range. The daemon stamps packets once per burst, so ties may
# come in another order (--ties).
compare_daemon_queries() {
    local dir=$1 all=$2 q filter from mode mid
    mid=$(printf '%d.%09d' $((TS_MID / 1000000000)) $((TS_MID % 1000000000)))
    for q in "|" "tcp port 80|" "ip6 and udp|" "vlan|" "host $V4|" "|$mid" "arp or icmp|$mid"; do
        filter=${q%|*}
        from=${q#*|}
        for mode in index noindex; do
            local args=(extract --dir "$dir" -o "$T/got.pcap")
            [[ -z $filter ]] || args+=(--filter "$filter")
            [[ -z $from ]] || args+=(--from "$from")
            [[ $mode == index ]] || args+=(--no-index)
            "$LINECAP" "${args[@]}" 2>"$T/err" || fail "extract '$filter' ($mode): $(cat "$T/err")"
            [[ ! -s $T/err ]] || fail "extract '$filter' ($mode): unexpected stderr: $(cat "$T/err")"
            if [[ -n $filter ]]; then
                tcpdump --time-stamp-precision=nano -r "$all" -w "$T/f.pcap" "$filter" 2>/dev/null
            else
                cp "$all" "$T/f.pcap"
            fi
            if [[ -n $from ]]; then $REF cut "$T/f.pcap" "$TS_MID" - "$T/want.pcap"; else $REF cut "$T/f.pcap" - - "$T/want.pcap"; fi
            $REF compare "$T/want.pcap" "$T/got.pcap" --ties >"$T/cmp" || fail "'$filter' from '$from' ($mode): $(cat "$T/cmp")"
            log "'$filter' from '${from:--}' ($mode): $(cat "$T/cmp")"
        done
    done
}
