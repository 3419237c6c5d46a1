#!/usr/bin/env bash
# Install what one job of linecap needs (Debian 12), by profile. Idempotent: when every
# package is already installed it does nothing (no apt-get update), so reruns take a
# fraction of a second. Needs root (or sudo) only when something is missing.
#
#   scripts/install-deps.sh run        build linecapd and linecap, and run the demo
#                                      (scripts/demo.sh): nothing only the tests use
#   scripts/install-deps.sh [test]     run, and everything the default test run uses
#                                      (scripts/run-tests.sh): the Ceph RGW, Chromium,
#                                      Stenographer, Prometheus, clang for fuzzing, ...
#   scripts/install-deps.sh vm         test, and what suite vm needs (tests/vm: the package
#                                      build and lintian, the mmdebstrap image, QEMU, buildah)
#   scripts/install-deps.sh --list PROFILE   the profile's packages, one a line; installs nothing
#
# Each profile is the one before it plus its own list below. infra-profiles checks them:
# the demo runs with only the run profile's programs on PATH, and every program a test or
# bench names (need_cmd) comes with the test profile (the vm suite's with vm).
set -euo pipefail

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }

RUN_PACKAGES=(
    # build linecapd and linecap (meson setup -Dtests=false -Dbench=false)
    build-essential g++ pkg-config meson ninja-build
    libdpdk-dev libpcap-dev libspdlog-dev libyaml-cpp-dev prometheus-cpp-dev libcivetweb-dev
    libssl-dev nlohmann-json3-dev libzstd-dev libcurl4-openssl-dev libexpat1-dev libboost-dev
    # the demo: a namespace and veth pair fed by tcpreplay, generated traffic (python3), the
    # metrics scrape (curl), capinfos on the files; hugetlbfs and bpffs mounts (util-linux)
    python3 iproute2 tcpreplay wireshark-common curl util-linux procps
)
TEST_PACKAGES=(
    # the test and bench programs (GoogleTest, Google Benchmark) and dpdk-testpmd
    dpdk-dev dpdk googletest libgtest-dev libgmock-dev libbenchmark-dev
    # integration tests and tools
    tshark tcpdump netcat-openbsd zstd prometheus ethtool netsniff-ng systemd python3-yaml kmod coreutils
    chromium openssl
    man-db groff bash-completion  # the man pages formatted without warnings; the completions
    # the live-path peer bench (bench/run.sh peers)
    stenographer
    stenographer-client jq  # Stenographer's stenoread, unchanged, against POST /query (api-steno)
    # the archive tier's tests: a real single-node Ceph RGW (tests/archive/rgw.sh) and s3cmd
    # to cross-check what linecap stored there
    ceph-mon ceph-osd radosgw ceph-common s3cmd
    # disk faults under capture: the FUSE file system that fails on command
    # (tests/lib/linecap_harness/faultfs.py) and e2fsck for the ext4 loop device's repair
    fuse3 python3-pyfuse3 e2fsprogs
    # the fuzzers (scripts/fuzz.sh): clang with libFuzzer and the sanitizers' runtime
    clang-14 libclang-rt-14-dev
)
# Suite vm (tests/vm): the Debian package (dpkg-buildpackage, debhelper, lintian), the
# Debian 12 image (mmdebstrap; mkfs.ext4 and debugfs from e2fsprogs above), the guest in
# QEMU with its disks (qemu-img, blkdebug) reached over ssh, the container image (buildah,
# and podman to import the image's root).
VM_PACKAGES=(
    qemu-system-x86 qemu-utils mmdebstrap debhelper dpkg-dev devscripts lintian fakeroot
    openssh-client buildah podman
)

# profile_packages PROFILE: the profile's packages, or nothing (status 1) for an unknown one.
profile_packages() {
    case $1 in
        run) printf '%s\n' "${RUN_PACKAGES[@]}" ;;
        test) printf '%s\n' "${RUN_PACKAGES[@]}" "${TEST_PACKAGES[@]}" ;;
        vm) printf '%s\n' "${RUN_PACKAGES[@]}" "${TEST_PACKAGES[@]}" "${VM_PACKAGES[@]}" ;;
        *) return 1 ;;
    esac
}

list=0
case ${1:-} in
    -h | --help) usage; exit 0 ;;
    --list) list=1; shift ;;
esac
(($# <= 1)) || { echo "install-deps: one profile at most (run, test or vm; see --help)" >&2; exit 64; }
profile=${1:-test}
mapfile -t PACKAGES < <(profile_packages "$profile") \
    && ((${#PACKAGES[@]})) \
    || { echo "install-deps: unknown profile '$profile' (expected run, test or vm; see --help)" >&2; exit 64; }
if ((list)); then
    printf '%s\n' "${PACKAGES[@]}"
    exit 0
fi

# missing_packages PKG...: prints the ones dpkg does not have installed (one query for all).
missing_packages() {
    local installed
    installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "$@" 2>/dev/null \
        | awk '$2 == "installed" { print $1 }' || true)
    local p
    for p in "$@"; do
        grep -qxF -- "$p" <<<"$installed" || echo "$p"
    done
}

mapfile -t missing < <(missing_packages "${PACKAGES[@]}")

if ((${#missing[@]} == 0)); then
    echo "install-deps: all ${#PACKAGES[@]} packages of profile $profile already installed"
    exit 0
fi

echo "install-deps: profile $profile: installing ${#missing[@]} missing package(s): ${missing[*]}"
SUDO=()
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || {
        echo "install-deps: not root and no sudo; install as root: apt-get install ${missing[*]}" >&2
        exit 1
    }
    SUDO=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
# wireshark-common asks whether non-root users may capture; answer it up front.
echo "wireshark-common wireshark-common/install-setuid boolean false" \
    | "${SUDO[@]}" debconf-set-selections

apt_opts=(-y -q --no-install-recommends -o Dpkg::Options::=--force-confdef
    -o Dpkg::Options::=--force-confold -o Dpkg::Use-Pty=0)
"${SUDO[@]}" apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install "${apt_opts[@]}" "${missing[@]}"

mapfile -t still < <(missing_packages "${missing[@]}")
if ((${#still[@]})); then
    echo "install-deps: still missing after apt-get install: ${still[*]}" >&2
    exit 1
fi
echo "install-deps: done"
