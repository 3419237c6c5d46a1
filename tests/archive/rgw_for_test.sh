# Sourced by the archive tier's tests after tests/lib/common.sh: start_rgw starts this
# test's own Ceph RGW (rgw.sh) under $TEST_TMPDIR/rgw, stopped on exit, and exports its
# s3.env (S3_ENDPOINT, S3_REGION, S3_BUCKET, S3_ACCESS_KEY, S3_SECRET_KEY); RGW is rgw.sh,
# D the RGW's directory (its credentials file: $D/credentials). Skips when Ceph is missing.
RGW=$(dirname "${BASH_SOURCE[0]}")/rgw.sh

start_rgw() {
    [[ -n ${TEST_TMPDIR:-} ]] || make_tmpdir
    D=$TEST_TMPDIR/rgw
    on_exit "bash '$RGW' stop '$D'"
    local rc=0
    bash "$RGW" start "$D" || rc=$?
    [[ $rc == 77 ]] && skip "Ceph RGW is not installed (scripts/install-deps.sh installs it)"
    [[ $rc == 0 ]] || fail "the RGW did not start"
    set -a
    # shellcheck disable=SC1091
    source "$D/s3.env"
    set +a
}
