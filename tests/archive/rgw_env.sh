# Sourced (after tests/lib/common.sh) by the tests and benchmarks that need an object store:
# `start_rgw [DIR]` brings up a Ceph RGW of their own (tests/archive/rgw.sh; DIR defaults to
# $TEST_TMPDIR/rgw; stopped on exit; skips when Ceph is not installed), exports its
# DIR/s3.env (S3_ENDPOINT, S3_REGION, S3_BUCKET, S3_ACCESS_KEY, S3_SECRET_KEY; RGW_SH,
# RGW_DIR; the credentials file is $RGW_DIR/credentials) and writes DIR/s3cfg for s3cmd,
# which `s3 ARGS...` runs. Call it in the script's main shell (it registers the cleanup).
RGW_SH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/rgw.sh

start_rgw() {  # [DIR]
    local rc=0
    RGW_DIR=${1:-$TEST_TMPDIR/rgw}
    on_exit "bash '$RGW_SH' stop '$RGW_DIR'"
    bash "$RGW_SH" start "$RGW_DIR" || rc=$?
    [[ $rc == 77 ]] && skip "Ceph RGW is not installed (scripts/install-deps.sh installs it)"
    [[ $rc == 0 ]] || fail "the RGW did not start"
    set -a
    # shellcheck disable=SC1091
    source "$RGW_DIR/s3.env"
    set +a
    export RGW_SH RGW_DIR
    cat >"$RGW_DIR/s3cfg" <<CFG
[default]
access_key = $S3_ACCESS_KEY
secret_key = $S3_SECRET_KEY
host_base = ${S3_ENDPOINT#http://}
host_bucket = ${S3_ENDPOINT#http://}
use_https = False
signature_v2 = False
bucket_location = $S3_REGION
CFG
}

s3() { s3cmd -c "$RGW_DIR/s3cfg" --no-progress -q "$@"; }
