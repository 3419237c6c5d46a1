#!/usr/bin/env bash
# Install what linecap needs to build and test (Debian 12). Idempotent: when every package
# is already installed it does nothing (no apt-get update), so reruns take a fraction of a
# second. Needs root (or sudo) only when something is missing.
#
#   scripts/install-deps.sh        what the build and the default test run need
#   scripts/install-deps.sh vm     that, and what suite vm needs (tests/vm: the package
#                                  build and lintian, the mmdebstrap image, QEMU, buildah)
set -euo pipefail

case ${1:-} in
    '') WITH_VM=0 ;;
    vm) WITH_VM=1 ;;
    -h | --help)
        sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "install-deps: unknown argument '$1' (expected nothing or 'vm')" >&2
        exit 64
        ;;
esac

PACKAGES=(
    # build
    build-essential g++ pkg-config meson ninja-build
    libdpdk-dev dpdk-dev dpdk libpcap-dev libspdlog-dev libyaml-cpp-dev prometheus-cpp-dev libcivetweb-dev
    libssl-dev nlohmann-json3-dev libzstd-dev googletest libgtest-dev libgmock-dev libbenchmark-dev
    libcurl4-openssl-dev libexpat1-dev
    # integration tests and tools
    tcpreplay tshark tcpdump netcat-openbsd zstd prometheus iproute2 ethtool netsniff-ng systemd python3 python3-yaml util-linux kmod procps curl coreutils
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
)
# Suite vm (tests/vm): the Debian package (dpkg-buildpackage, debhelper, lintian), the
# Debian 12 image (mmdebstrap; mkfs.ext4 and debugfs from e2fsprogs above), the guest in
# QEMU with its disks (qemu-img, blkdebug) reached over ssh, the container image (buildah,
# and podman to import the image's root).
VM_PACKAGES=(
    qemu-system-x86 qemu-utils mmdebstrap debhelper dpkg-dev devscripts lintian fakeroot
    openssh-client buildah podman
)
((WITH_VM == 0)) || PACKAGES+=("${VM_PACKAGES[@]}")

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
    echo "install-deps: all ${#PACKAGES[@]} packages already installed"
    exit 0
fi

echo "install-deps: installing ${#missing[@]} missing package(s): ${missing[*]}"
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
