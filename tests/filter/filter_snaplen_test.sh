#!/usr/bin/env bash
# Snap length in the real daemon: records are written with caplen = min(len, snaplen) and
# the original length kept, byte for byte what a truncating capture tool writes. The
# reference is `editcap -s N` (Wireshark): tcpdump 4.99 ignores -s when it reads a file
# (`tcpdump -r in.pcap -s 96 -w out.pcap` writes whole packets), so it cannot produce the
# expected file here; filter_reload_test.sh compares with a live `tcpdump -s` instead.
#
# Ports (one daemon run, net_pcap replay, 2 queues each, one worker):
#   s96     snaplen 96, no filter, mix + edge cases
#   s4000   snaplen 4000, mtu 9000, jumbo mix (frames up to 9014 bytes cut at 4000)
#   s128f   snaplen 128 with a filter on the last byte of the frame: the filter sees the
#           whole packet (a load beyond byte 128 decides), only the record is cut;
#           expected = tcpdump's selection, cut with editcap
#   s60     snaplen 60 <= every frame: every record is cut or exactly 60 bytes
# Each output file's header carries the port's snap length.
source "${LINECAP_SRC:?}/tests/lib/common.sh"
source "$LINECAP_SRC/tests/filter/filter_lib.sh"
need_root
need_linecapd
need_cmd tcpdump editcap
need_hugepages 256
make_tmpdir

in=$TEST_TMPDIR/in
out=$TEST_TMPDIR/out
exp=$TEST_TMPDIR/expected
mkdir -p "$in" "$out" "$exp"

gen_pcap --count 3000 --mix --tcp-flags --both-directions --flows 300 --seed 31 --out "$in/mix.pcap"
craft_pcap --out "$in/craft.pcap"
gen_pcap --count 1500 --mix --jumbo --seed 32 --flows 200 --out "$in/jumbo.pcap"
gen_pcap --count 1000 --mix --jumbo --tcp-flags --seed 33 --flows 100 --out "$in/jumbo2.pcap"

# name snaplen filter queue0 queue1
PORTS=(
    "s96 96 - mix craft"
    "s4000 4000 - jumbo jumbo2"
    "s128f 128 ether[len_-_1]_&_1_=_0_or_less_100 jumbo craft"
    "s60 60 - craft mix"
)

expected_total=0
{
    printf 'eal:\n  lcores: "0-1"\nports:\n'
    n=0
    for p in "${PORTS[@]}"; do
        read -r name snaplen filter q0 q1 <<<"$p"
        filter=${filter//_/ }
        [[ $filter != - ]] || filter=
        for q in 0 1; do
            src=$q0
            ((q == 0)) || src=$q1
            if [[ -n $filter ]]; then
                tcpdump -r "$in/$src.pcap" -w "$exp/sel-$name-q$q.pcap" "$filter" 2>/dev/null \
                    || fail "tcpdump rejects '$filter'"
                editcap -F nsecpcap -s "$snaplen" "$exp/sel-$name-q$q.pcap" "$exp/$name-q$q.pcap"
            else
                editcap -F nsecpcap -s "$snaplen" "$in/$src.pcap" "$exp/$name-q$q.pcap"
            fi
            expected_total=$((expected_total + $(records "$exp/$name-q$q.pcap")))
        done
        cat <<YAML
  - name: $name
    device: "net_pcap$n,rx_pcap=$in/$q0.pcap,rx_pcap=$in/$q1.pcap"
    rx_queues: 2
    rx_descriptors: 256
    mtu: 9000
    snaplen: $snaplen
    filter: "$filter"
YAML
        n=$((n + 1))
    done
    cat <<YAML
output:
  directory: "$out"
  blocks_per_queue: 8
  block_size_kb: 256
  rotate: { size_mb: 1024, interval_s: 0 }
  manifest: false
metrics:
  enabled: false
YAML
} >"$TEST_TMPDIR/linecap.yaml"

# The filter must have decided on bytes past the snap length for the s128f check to mean
# anything: of the packets longer than 200 bytes, some are kept and some are not.
long_in=$(tcpdump -r "$in/jumbo.pcap" greater 200 2>/dev/null | wc -l)
long_kept=$(tcpdump -r "$exp/sel-s128f-q0.pcap" greater 200 2>/dev/null | wc -l)
((long_kept > 0 && long_kept < long_in)) \
    || fail "s128f keeps $long_kept of $long_in long packets: the filter does not decide on bytes past the snap length"

start_linecapd "$TEST_TMPDIR/linecap.yaml"
await_records "$out" "$expected_total" 180

failures=0
for p in "${PORTS[@]}"; do
    read -r name snaplen _ <<<"$p"
    for q in 0 1; do
        stream_output "$out" "$name" "$q" "$TEST_TMPDIR/got-$name-q$q.pcap" >/dev/null
        if ! pcap_compare headers "$exp/$name-q$q.pcap" "$TEST_TMPDIR/got-$name-q$q.pcap" >"$TEST_TMPDIR/cmp.txt" 2>&1; then
            log "MISMATCH $name queue $q: $(tail -n 5 "$TEST_TMPDIR/cmp.txt")"
            failures=$((failures + 1))
        fi
        for f in "$out"/*-"$name"-q"$q".pcap; do
            hdr=$(python3 -c 'import struct,sys; print(struct.unpack("<I", open(sys.argv[1],"rb").read(24)[16:20])[0])' "$f")
            [[ $hdr == "$snaplen" ]] || { log "$f: file header snaplen $hdr, expected $snaplen"; failures=$((failures + 1)); }
        done
    done
done
pcap_compare validate "$out" >/dev/null || fail "an output file is not valid pcap (caplen > snaplen?)"
((failures == 0)) || fail "$failures snap-length mismatch(es)"
log "OK: record headers (caplen, len) and data equal editcap -s for snap lengths 60, 96, 128 (+filter), 4000"
