#!/usr/bin/env bash
# The container image, built for real: the project's Dockerfile with buildah (chroot
# isolation: no container runtime, no rlimit changes needed) on a Debian 12 base image that
# `podman import` makes of the appliance test's mmdebstrap root (tests/vm/image.sh), with the
# package of this tree (tests/vm/deb.sh; PACKAGE=local). Then, in the image (buildah run):
#   linecapd --version;
#   linecapd --check on the shipped example (/etc/linecap/linecap.yaml): it runs the
#     preflight and refuses, naming the example's PCI address, which no container has;
#   a short capture from a pcap file mounted in (net_pcap, no hugepages), with the output
#     directory mounted from the host: exactly the packets of the file, valid files whose
#     manifests `linecapd verify` accepts.
# The test image and its working container are removed at the end; the base image stays
# (named after the image cache key) for the next run.
# Environment: as tests/vm/vm_test.sh (LINECAP_VM_CACHE, LINECAP_DEB, LINECAP_VM_EVIDENCE).
TEST_NAME=container  # for common.sh's log lines and temp dir names
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_root
need_cmd podman buildah mmdebstrap dpkg-buildpackage
make_tmpdir
T=$TEST_TMPDIR
VM_DIR=$(dirname "${BASH_SOURCE[0]}")
EVIDENCE=${LINECAP_VM_EVIDENCE:-}
[[ -z $EVIDENCE ]] || mkdir -p "$EVIDENCE"
OUT_LOG=$T/container-test.log
show_on_failure "$OUT_LOG"
[[ -z $EVIDENCE ]] || on_exit "cp '$OUT_LOG' '$EVIDENCE/container.txt'"
# say MSG: a line for the log (and the evidence file).
say() {
    log "$*"
    printf '%s\n' "$*" >>"$OUT_LOG"
}

DEB=$(bash "$VM_DIR/deb.sh") || fail "the package did not build"
IMAGE=$(bash "$VM_DIR/image.sh" "$DEB") || fail "the image did not build"

BASE=localhost/linecap-base:$(basename "$IMAGE")
if ! podman image exists "$BASE"; then
    start=$SECONDS
    podman import -q "$IMAGE/rootfs.tar" "$BASE" >/dev/null || fail "podman import of $IMAGE/rootfs.tar failed"
    say "podman import: $BASE in $((SECONDS - start))s"
fi
# The base images of other image keys go: image.sh keeps one image, this keeps its import.
podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/linecap-base:' | grep -vxF "$BASE" \
    | xargs -r podman rmi >/dev/null 2>&1 || true

TAG=localhost/linecap-test:$$
# The Dockerfile's build stages leave untagged images behind: those this build made go too.
podman images -q --filter dangling=true | sort >"$T/dangling.before"
on_exit "podman images -q --filter dangling=true | sort | comm -13 '$T/dangling.before' - | xargs -r podman rmi -f >/dev/null 2>&1"
CTX=$T/context
mkdir "$CTX"
cp "$DEB" "$CTX/"
on_exit "buildah rmi -f '$TAG' >/dev/null 2>&1"
_lc_reaper_add "buildah rmi -f '$TAG'"
start=$SECONDS
buildah bud --isolation chroot --pull=false --layers=false --build-arg "BASE=$BASE" --build-arg PACKAGE=local \
    -f "$LINECAP_SRC/Dockerfile" -t "$TAG" "$CTX" >"$T/bud.log" 2>&1 \
    || { [[ -z $EVIDENCE ]] || cp "$T/bud.log" "$EVIDENCE/container-bud-failed.log"; tail -40 "$T/bud.log" >&2; fail "buildah bud failed"; }
say "buildah bud: $TAG in $((SECONDS - start))s"
grep -E '^(Get|Fetched|Setting up linecap|\[[0-9]/[0-9]\] STEP)' "$T/bud.log" >>"$OUT_LOG"
CTR=$(buildah from --pull=false "$TAG") || fail "buildah from $TAG failed"
on_exit "buildah rm '$CTR' >/dev/null 2>&1"
_lc_reaper_add "buildah rm '$CTR'"
# run ARGS... -- CMD...: buildah run in the working container, with the capability the
# Dockerfile's `docker run` line adds for the workers' real-time priority (SYS_NICE; the
# others it lists are for vfio and hugepages, which a net_pcap capture does not use).
run() { buildah run --isolation chroot --cap-add CAP_SYS_NICE "$@"; }

say "\$ linecapd --version"
run "$CTR" -- linecapd --version >"$T/version" 2>&1 || fail "linecapd --version failed: $(cat "$T/version")"
cat "$T/version" >>"$OUT_LOG"
grep -q "^linecapd .*DPDK 22.11" "$T/version" || fail "unexpected --version output"

say "\$ linecapd --config /etc/linecap/linecap.yaml --check   (the shipped example)"
rc=0
run "$CTR" -- linecapd --config /etc/linecap/linecap.yaml --check >"$T/check" 2>&1 || rc=$?
cat "$T/check" >>"$OUT_LOG"
say "exit status $rc"
[[ $rc == 78 ]] || fail "--check on the shipped example: exit $rc, expected 78 (its PCI ports do not exist here)"
grep -q "error.*0000:03:00.0" "$T/check" || fail "--check does not name the example's missing PCI device"

say "short capture from a pcap file mounted in"
mkdir -p "$T/in" "$T/out"
gen_pcap --count 1000 --mix --seed 7 --out "$T/in/sent.pcap"
METRICS_PORT=$(free_tcp_port)
cat >"$T/in/linecap.yaml" <<EOF
eal: {lcores: "0-1", hugepages: false}
ports:
  - {name: file0, device: "net_pcap0,rx_pcap=/in/sent.pcap", rx_queues: 1, rx_descriptors: 512}
output:
  directory: /out
  rotate: {size_mb: 16}
  block_size_kb: 256
  blocks_per_queue: 4
metrics:
  enabled: true
  listen: "127.0.0.1:$METRICS_PORT"
EOF
# linecapd runs in the container until the host has seen every packet written (through the
# metrics endpoint: chroot isolation keeps the host's network), then the host asks for the
# stop through a file in a writable mount and the container's shell sends SIGINT.
mkdir "$T/ctl"
# /out, not the image's VOLUME /var/lib/linecap: buildah run does not put a bind mount over
# a declared volume (the files stayed in the container).
run -v "$T/in:/in:ro" -v "$T/ctl:/ctl" -v "$T/out:/out" "$CTR" -- \
    sh -c 'linecapd --config /in/linecap.yaml & pid=$!
           while [ ! -e /ctl/stop ] && kill -0 $pid 2>/dev/null; do sleep 0.1; done
           kill -INT $pid; wait $pid' >"$T/capture.log" 2>&1 &
RUN_PID=$!
on_exit "touch '$T/ctl/stop'; wait $RUN_PID 2>/dev/null"
show_on_failure "$T/capture.log"
URL=http://127.0.0.1:$METRICS_PORT/metrics
wait_for "(( \$(metric_sum $URL linecap_written_packets_total) >= 1000 ))" 120 \
    || fail "linecapd in the container did not write the 1000 packets"
touch "$T/ctl/stop"
rc=0
wait "$RUN_PID" || rc=$?
cat "$T/capture.log" >>"$OUT_LOG"
[[ $rc == 0 ]] || fail "linecapd in the container exited $rc"
grep -E "port file0: .* packets reached the port" "$T/capture.log" >/dev/null || fail "no capture summary"
{ echo "files written:"; ls -l "$T/out"; } >>"$OUT_LOG"
pcap_compare validate "$T/out" >>"$OUT_LOG" 2>&1 || fail "the files written in the container are not valid"
pcap_compare multiset "$T/in/sent.pcap" "$T/out" >>"$OUT_LOG" 2>&1 || fail "the files do not hold exactly the packets of the file"
run -v "$T/out:/out" "$CTR" -- linecapd verify /out >>"$OUT_LOG" 2>&1 \
    || fail "linecapd verify failed on the files"
say "PASS"
