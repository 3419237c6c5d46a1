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
STORE=$T/store
# shellcheck source=query_set.sh
source "$LINECAP_SRC/tests/store/query_set.sh"
make_query_store "$STORE"

run_queries() {  # MODE: index | noindex | partial
    local mode=$1 i=0 q name from to filter args
    for q in "${queries[@]}"; do
        IFS='|' read -r name from to filter <<<"$q"
        query_args "$from" "$to" "$filter" "$i"
        args=(extract --dir "$STORE" -o "$T/got.pcap" "${QARGS[@]}")
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
        want_pcap "$name" "$from" "$to" "$filter"
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
write_manifests "$STORE"
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
