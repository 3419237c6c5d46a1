#!/usr/bin/env bash
# A real S3 store for the archive tier's tests: a single-node Ceph cluster (one monitor, one
# OSD on the in-memory memstore object store, no mgr) and radosgw on loopback, every file
# under one directory.
#
#   rgw.sh start DIR    start it (~15-40 s), create a user and the bucket "linecap-test";
#                       writes DIR/s3.env (S3_ENDPOINT, S3_REGION, S3_BUCKET, S3_ACCESS_KEY,
#                       S3_SECRET_KEY) and DIR/credentials (AWS shared-credentials format, 0600)
#   rgw.sh stop DIR     stop every daemon it started and remove DIR
#   rgw.sh restart-rgw DIR   stop radosgw and start it again (objects are kept)
#   rgw.sh stop-rgw DIR      stop radosgw only (the store's data stays in the OSD)
#
# The OSD keeps objects in RAM (memstore, at most RGW_MEMSTORE_BYTES, default 2 GiB; it
# takes about twice that in memory). RGW_DISK_BYTES=N puts them on the disk instead:
# BlueStore on a file of N bytes under DIR (a benchmark's store of 10 GB does not fit in RAM).
#
# Each start step has a deadline; on failure the daemons' logs are printed and everything
# started is stopped. Ceph 16 (Debian 12) with auth "none" needs every messenger mode at
# "crc": with the default "secure" radosgw loops on get_initial_auth_request -13 and hangs.
set -euo pipefail

cmd=${1:?usage: rgw.sh start|stop|restart-rgw|stop-rgw DIR}
D=${2:?usage: rgw.sh $cmd DIR}

log() { printf '[%s rgw] %s\n' "$(date +%T)" "$*" >&2; }

# free_port: a loopback TCP port nothing listens on.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# until_ok SECONDS WHAT CMD...: run CMD until it succeeds, or fail after SECONDS.
until_ok() {
    local secs=$1 what=$2
    shift 2
    local deadline=$((SECONDS + secs))
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS >= deadline)); then
            log "timed out after ${secs}s: $what"
            return 1
        fi
        sleep 0.2
    done
}

stop_pids() {  # stop_pids PIDFILE...: TERM, then KILL what is left after 10 s
    local f pid pids=()
    for f in "$@"; do
        [[ -f $f ]] || continue
        pid=$(<"$f")
        [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && pids+=("$pid")
    done
    ((${#pids[@]})) || return 0
    kill -TERM "${pids[@]}" 2>/dev/null || true
    local deadline=$((SECONDS + 10))
    for pid in "${pids[@]}"; do
        while kill -0 "$pid" 2>/dev/null; do
            if ((SECONDS >= deadline)); then kill -KILL "$pid" 2>/dev/null || true; fi
            sleep 0.1
        done
    done
}

ceph_() { timeout 20 ceph -c "$D/ceph.conf" "$@"; }

start_rgw() {
    # radosgw returns only once it reached the cluster: bound it.
    timeout 60 radosgw -c "$D/ceph.conf" -n client.rgw --pid-file "$D/run/rgw.pid" \
        --log-file "$D/log/rgw.log" || { log "radosgw did not start"; return 1; }
    # shellcheck disable=SC1091
    source "$D/s3.env"
    until_ok 60 "radosgw answering on $S3_ENDPOINT" curl -sf -o /dev/null "$S3_ENDPOINT"
}

start() {
    [[ ! -e $D/ceph.conf ]] || { log "$D already holds a cluster"; exit 1; }
    for c in ceph-mon ceph-osd radosgw radosgw-admin monmaptool; do
        command -v "$c" >/dev/null || { echo "SKIP: $c not installed (scripts/install-deps.sh)"; exit 77; }
    done
    mkdir -p "$D"/{mon,osd,rgw,run,log,crash}
    D=$(cd "$D" && pwd)
    local fsid mon_port rgw_port
    fsid=$(cat /proc/sys/kernel/random/uuid)
    mon_port=$(free_port)
    rgw_port=$(free_port)
    cat >"$D/ceph.conf" <<EOF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$mon_port
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr1 = false
auth cluster required = none
auth service required = none
auth client required = none
ms cluster mode = crc
ms service mode = crc
ms client mode = crc
ms mon cluster mode = crc
ms mon service mode = crc
ms mon client mode = crc
keyring = /dev/null
run dir = $D/run
crash dir = $D/crash
log file = $D/log/\$name.log
admin socket = $D/run/\$name.asok
pid file = $D/run/\$name.pid
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon max pg per osd = 1000
mon osd full ratio = .99
mon osd nearfull ratio = .99
osd failsafe full ratio = .99
[mon]
mon data = $D/mon/\$cluster-\$id
[osd]
osd data = $D/osd/\$cluster-\$id
$(objectstore_conf)
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$rgw_port
rgw data = $D/rgw
EOF
    local access secret
    access=LC$(head -c 9 /dev/urandom | od -An -tx1 | tr -d ' \n' | tr a-f A-F)
    secret=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
    cat >"$D/s3.env" <<EOF
S3_ENDPOINT=http://127.0.0.1:$rgw_port
S3_REGION=us-east-1
S3_BUCKET=linecap-test
S3_ACCESS_KEY=$access
S3_SECRET_KEY=$secret
EOF
    (umask 077 && printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
        "$access" "$secret" >"$D/credentials")

    trap 'log "start failed; logs:"; tail -n 20 "$D"/log/*.log >&2 || true; [[ -z ${RGW_KEEP_LOGS:-} ]] || cp -r "$D/log" "$RGW_KEEP_LOGS"; stop; exit 1' ERR
    log "monitor on 127.0.0.1:$mon_port"
    monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port]" "$D/monmap" >/dev/null
    timeout 30 ceph-mon -c "$D/ceph.conf" -i a --mkfs --monmap "$D/monmap" >/dev/null
    timeout 30 ceph-mon -c "$D/ceph.conf" -i a
    until_ok 60 "monitor quorum" ceph_ -s
    log "OSD ($(sed -n 's/^osd objectstore = //p' "$D/ceph.conf"))"
    local uuid id
    uuid=$(cat /proc/sys/kernel/random/uuid)
    id=$(ceph_ osd new "$uuid")
    mkdir -p "$D/osd/ceph-$id"  # neither objectstore's mkfs creates its data directory
    timeout 60 ceph-osd -c "$D/ceph.conf" -i "$id" --mkfs --osd-uuid "$uuid" >/dev/null 2>&1
    timeout 30 ceph-osd -c "$D/ceph.conf" -i "$id"
    until_ok 60 "OSD up" bash -c "ceph -c '$D/ceph.conf' osd stat -f json | grep -q '\"num_up_osds\":1'"
    log "radosgw on 127.0.0.1:$rgw_port"
    start_rgw
    timeout 60 radosgw-admin -c "$D/ceph.conf" -n client.rgw user create --uid linecap-test \
        --display-name linecap-test --access-key "$access" --secret-key "$secret" >/dev/null
    # RGW creates its data pool on the first write (~10 s): make it before any test does.
    printf '[default]\naccess_key = %s\nsecret_key = %s\nhost_base = 127.0.0.1:%s\nhost_bucket = 127.0.0.1:%s\nuse_https = False\nsignature_v2 = False\n' \
        "$access" "$secret" "$rgw_port" "$rgw_port" >"$D/s3cfg"
    until_ok 90 "bucket linecap-test created" s3cmd -c "$D/s3cfg" mb s3://linecap-test
    printf 'ready\n' >"$D/warmup"
    until_ok 90 "first object stored" s3cmd -c "$D/s3cfg" put "$D/warmup" s3://linecap-test/.warmup
    s3cmd -c "$D/s3cfg" del s3://linecap-test/.warmup >/dev/null
    trap - ERR
    log "ready: $(grep S3_ENDPOINT "$D/s3.env"), bucket linecap-test"
}

objectstore_conf() {
    if [[ -n ${RGW_DISK_BYTES:-} ]]; then
        printf 'osd objectstore = bluestore\nbluestore block create = true\n'
        printf 'bluestore block size = %s\nosd memory target = 1073741824\n' "$RGW_DISK_BYTES"
    else
        printf 'osd objectstore = memstore\nmemstore device bytes = %s\n' "${RGW_MEMSTORE_BYTES:-2147483648}"
    fi
}

stop() {
    [[ -d $D ]] || return 0
    stop_pids "$D"/run/rgw.pid
    stop_pids "$D"/run/*.pid
    rm -rf -- "$D"
}

case $cmd in
    start) start ;;
    stop) stop ;;
    stop-rgw) stop_pids "$D/run/rgw.pid" ;;
    restart-rgw) stop_pids "$D/run/rgw.pid" && start_rgw ;;
    *) echo "usage: rgw.sh start|stop|restart-rgw|stop-rgw DIR" >&2; exit 2 ;;
esac
