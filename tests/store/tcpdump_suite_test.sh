#!/usr/bin/env bash
# `linecap extract` against `tcpdump -r` over tcpdump's own test captures (the shared
# corpus beside the clone: ../shared/corpus/tcpdump-tests, or LINECAP_TCPDUMP_TESTS), as
# pcap µs / ns / big-endian and pcapng, 4 filters x 4 time windows, scanned and indexed
# (tests/store/tcpdump_suite_compare.py says how). Every remaining mismatch is listed; the
# test fails when there are more than the documented ones (README: "Compared with tcpdump").
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_cmd tcpdump python3
LINECAP=${LINECAP:-$LINECAP_BUILD/src/linecap}
[[ -x $LINECAP ]] || skip "linecap binary not found at $LINECAP"
CORPUS=${LINECAP_TCPDUMP_TESTS:-$LINECAP_SRC/../shared/corpus/tcpdump-tests}
[[ -d $CORPUS ]] || skip "tcpdump's test captures not found at $CORPUS (set LINECAP_TCPDUMP_TESTS)"
make_tmpdir
python3 "$LINECAP_SRC/tests/store/tcpdump_suite_compare.py" "$CORPUS" "$LINECAP" "$TEST_TMPDIR" \
    --max-mismatches "${LINECAP_TCPDUMP_MAX_MISMATCHES:-0}" || fail "linecap extract differs from tcpdump (above)"
log "OK: linecap extract agrees with tcpdump over $CORPUS"
