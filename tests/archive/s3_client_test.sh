#!/usr/bin/env bash
# The S3 client (src/s3) against a real single-node Ceph RGW started for this test
# (tests/archive/rgw.sh): put/head/get/range, listing pages and odd keys, multipart upload
# and abort, refusals (wrong secret, unknown key, missing bucket), a store that is down;
# whole-file uploads (one PUT or parts, verified), retried across a radosgw restart, and
# what a kill mid-upload leaves (no object; aborted at restart).
# Usage: s3_client_test.sh GTEST_BINARY
TEST_NAME=archive-s3-client
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_root
make_tmpdir
# shellcheck source=rgw_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/rgw_env.sh"
start_rgw "$TEST_TMPDIR/rgw"  # RGW_SH, RGW_DIR: for the test that stops and restarts radosgw
# GoogleTest's TempDir() is $TEST_TMPDIR: the uploads' source files go with this test's directory.
TEST_TMPDIR=$TEST_TMPDIR "${1:?usage: s3_client_test.sh GTEST_BINARY}" || fail "s3 client tests failed"
log "ok"
