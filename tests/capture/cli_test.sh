#!/usr/bin/env bash
# The command line contract: --version, --help, usage errors (64), configuration errors
# (78, one line naming file, line and key), --check on a good configuration (0).
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_linecapd
make_tmpdir

expect_exit() {
    local want=$1 rc=0
    shift
    "$@" >"$TEST_TMPDIR/out" 2>&1 || rc=$?
    ((rc == want)) || fail "'$*' exited $rc, expected $want: $(cat "$TEST_TMPDIR/out")"
}

expect_exit 0 "$LINECAPD" --version
grep -Eq '^linecapd [0-9]+\.[0-9]+\.[0-9]+ \(DPDK 22\.11' "$TEST_TMPDIR/out" || fail "--version: $(cat "$TEST_TMPDIR/out")"
expect_exit 0 "$LINECAPD" --help
grep -q -- '--check' "$TEST_TMPDIR/out" || fail "--help does not document --check"
expect_exit 64 "$LINECAPD"
grep -q -- '--config FILE is required' "$TEST_TMPDIR/out" || fail "no --config: $(cat "$TEST_TMPDIR/out")"
expect_exit 64 "$LINECAPD" --config x.yaml stray-argument

mkdir "$TEST_TMPDIR/out-dir"
good="$TEST_TMPDIR/good.yaml"
cat >"$good" <<YAML
eal:
  lcores: "0-1"
  hugepages: false
ports:
  - name: p0
    device: "net_null0"
output:
  directory: "$TEST_TMPDIR/out-dir"
  rotate: { size_mb: 1, interval_s: 60 }
metrics:
  enabled: false
YAML
expect_exit 0 "$LINECAPD" --config "$good" --check
grep -q 'ready' "$TEST_TMPDIR/out" || fail "--check on a good config: $(cat "$TEST_TMPDIR/out")"

# A typo is not silently ignored: exit 78, the message names file, line and key.
sed 's/rx_queues/rx_queus/; s/    device: "net_null0"/    device: "net_null0"\n    rx_queus: 2/' "$good" >"$TEST_TMPDIR/typo.yaml"
expect_exit 78 "$LINECAPD" --config "$TEST_TMPDIR/typo.yaml" --check
grep -q "typo.yaml:7: ports\[0\]: unknown key 'rx_queus'" "$TEST_TMPDIR/out" || fail "typo: $(cat "$TEST_TMPDIR/out")"
expect_exit 78 "$LINECAPD" --config "$TEST_TMPDIR/typo.yaml"

expect_exit 78 "$LINECAPD" --config "$TEST_TMPDIR/missing.yaml"
grep -q 'missing.yaml' "$TEST_TMPDIR/out" || fail "missing file: $(cat "$TEST_TMPDIR/out")"

# The daemon itself refuses to start on what --check refuses: nothing is touched.
sed "s|directory: \"$TEST_TMPDIR/out-dir\"|directory: \"$TEST_TMPDIR/nonexistent\"|" "$good" >"$TEST_TMPDIR/nodir.yaml"
expect_exit 78 "$LINECAPD" --config "$TEST_TMPDIR/nodir.yaml"
grep -q "output.directory $TEST_TMPDIR/nonexistent" "$TEST_TMPDIR/out" || fail "missing dir: $(cat "$TEST_TMPDIR/out")"
log "OK"
