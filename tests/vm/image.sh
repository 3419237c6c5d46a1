#!/usr/bin/env bash
# image.sh DEB: the Debian 12 root the appliance tests boot (tests/vm/vm_test.sh) and build
# the container on (tests/vm/container_test.sh), built once with mmdebstrap and cached
# outside the source tree. Prints the cache directory, which holds:
#
#   rootfs.tar     the root file system (podman import makes the container base image of it)
#   disk.img       the same tree as an ext4 image (QEMU boots a throw-away overlay of it)
#   vmlinuz, initrd.img   the guest kernel (QEMU boots it directly: no boot loader)
#   id_ed25519     the key the tests log in with (root, over the guest's management NIC)
#   packages-pulled  what `apt install ./linecap_*.deb` added to the bare system
#   build-seconds  how long the build took
#   dpkg-status    the image's dpkg database (/var/lib/dpkg/status), read from disk.img
#   extra-debs/    the dependencies of DEB that the image lacks (below); often empty
#
# The root is a bare Debian 12 (required + important priority) plus a kernel, udev, iproute2,
# pciutils and an ssh server - and linecap's dependencies: the image build installs the
# package with apt (from the Debian mirror) and purges it again, recording what apt pulled
# in. Each test run then installs the package under test offline, so a dependency the
# package does not declare makes the install (or linecapd) fail there.
#
# The cache key hashes what goes into the image and nothing else: the recipe (this script
# from the line "# ---- the recipe" to its end, comments included), the base packages, the
# suite and the mirror. Not the package: a package that declares a dependency the image
# lacks (a library linecap started to link) keeps the image, and gets the missing .debs
# from the mirror instead, resolved by apt against the image's own dpkg database, in
# extra-debs/ (exactly what this DEB needs beyond the image, replaced on every call);
# vm_test.sh installs them with the package, still offline. Rebuilding the image takes
# minutes on a quiet machine and over an hour on a loaded one (tests/README.md).
# Environment: LINECAP_VM_CACHE (default /var/cache/linecap-vm), LINECAP_MIRROR (default
# http://deb.debian.org/debian). Needs root, mmdebstrap, mkfs.ext4, debugfs (e2fsprogs), and
# for extra-debs current apt lists on the host (apt-get update).
set -euo pipefail

DEB=$(realpath "${1:?usage: image.sh DEB}")
CACHE_ROOT=${LINECAP_VM_CACHE:-/var/cache/linecap-vm}
MIRROR=${LINECAP_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
# What the guest needs beside linecap: systemd as PID 1, a kernel with its initramfs,
# udev/kmod for vfio-pci, the tools the test runs in the guest, and the login.
BASE_PACKAGES=systemd-sysv,linux-image-amd64,udev,kmod,iproute2,pciutils,openssh-server,python3

log() { printf '%(%H:%M:%S)T image: %s\n' -1 "$*" >&2; }

key=$( { sed -n '/^# ---- the recipe/,$p' "${BASH_SOURCE[0]}"; echo "$BASE_PACKAGES $SUITE $MIRROR"; } \
    | sha256sum | cut -c1-16)
IMAGES=$CACHE_ROOT/image
DIR=$IMAGES/$key

# extra_debs: fills $DIR/extra-debs with the .debs of DEB's dependencies (Depends,
# Pre-Depends, Recommends, and theirs) that the image does not hold at a version that
# satisfies them: `apt-get --download-only` with the image's dpkg database as the status.
extra_debs() {
    if [[ ! -s $DIR/dpkg-status ]]; then
        # debugfs reads the one file out of the ext4 image (the tar would be read whole).
        debugfs -R 'cat /var/lib/dpkg/status' "$DIR/disk.img" >"$DIR/.dpkg-status" 2>/dev/null || true
        grep -q '^Package: ' "$DIR/.dpkg-status" || { log "cannot read /var/lib/dpkg/status from $DIR/disk.img"; return 1; }
        mv "$DIR/.dpkg-status" "$DIR/dpkg-status"
    fi
    local extra=$DIR/extra-debs uris
    local apt=(apt-get -q -y -o "Dir::State::status=$DIR/dpkg-status" -o Debug::NoLocking=1
        -o APT::Install-Recommends=true)
    mkdir -p "$extra/partial" "$DIR/.no-archives/partial"
    # The files apt would fetch (--print-uris: 'URI' FILE SIZE HASH; DEB itself is a file: URI),
    # asked with an empty archive directory: apt leaves out what its archives already hold.
    uris=$("${apt[@]}" -o "Dir::Cache::archives=$DIR/.no-archives" --print-uris install "$DEB" 2>"$extra.log") \
        || { cat "$extra.log" >&2; log "apt cannot resolve the dependencies of $DEB against the image (apt-get update?)"; return 1; }
    local -A want=()
    local f
    while read -r _ f _; do
        if [[ -n $f ]]; then want[$f]=1; fi
    done < <(grep "^'" <<<"$uris" | grep -v "^'file:" || true)
    # Downloads left by another package's run go: the guest gets exactly what DEB needs.
    for f in "$extra"/*.deb; do
        if [[ -e $f && -z ${want[${f##*/}]:-} ]]; then rm -f "$f"; fi
    done
    if ((${#want[@]} > 0)); then
        "${apt[@]}" -o "Dir::Cache::archives=$extra" --download-only install "$DEB" >>"$extra.log" 2>&1 \
            || { cat "$extra.log" >&2; log "downloading the dependencies the image lacks failed"; return 1; }
        rm -f "$extra/${DEB##*/}"
        log "the image lacks ${#want[@]} package(s) $(basename "$DEB") depends on, downloaded into $extra: ${!want[*]}"
    fi
    rm -rf "$extra/partial" "$DIR/.no-archives"
}

mkdir -p "$IMAGES"
# One builder at a time; a second caller waits for the first and then finds it done.
exec 9>"$IMAGES/.lock"
flock 9
if [[ -s $DIR/disk.img && -s $DIR/rootfs.tar && -f $DIR/build-seconds ]]; then
    log "cached: $DIR"
    extra_debs || exit 1
    echo "$DIR"
    exit 0
fi

# ---- the recipe: from here to the end, everything goes into the image key (above). A new
# image holds every dependency of DEB, so it needs no extra-debs.
start=$SECONDS
WORK=$(mktemp -d "$IMAGES/.build-$key.XXXXXX")
trap 'rm -rf --one-file-system "$WORK"' EXIT
ssh-keygen -q -t ed25519 -N '' -C linecap-vm-test -f "$WORK/id_ed25519"
cp "$DEB" "$WORK/linecap.deb"

# The guest's management NIC (the one QEMU's user network backs; MAC set by vm_test.sh)
# gets DHCP from systemd-networkd; the capture NICs are left unconfigured, as on an appliance.
cat >"$WORK/10-mgmt.network" <<'NET'
[Match]
MACAddress=52:54:00:00:00:01
[Network]
DHCP=ipv4
NET

log "mmdebstrap $SUITE ($BASE_PACKAGES + linecap's dependencies) into $WORK/rootfs.tar"
# Hooks: record what apt pulled in for linecap, purge linecap (each run installs the package
# under test), then configure login, network, fstab, and switch off what only slows a
# test boot (timers that run apt, man-db, fstrim).
nice -n 10 mmdebstrap --variant=important --mode=root \
    --include="$BASE_PACKAGES" \
    --customize-hook="chroot \"\$1\" dpkg-query -W -f='\${Package}\n' | sort > \"$WORK/packages-before\"" \
    --customize-hook="cp $WORK/linecap.deb \"\$1\"/tmp/linecap.deb" \
    --customize-hook='chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q /tmp/linecap.deb' \
    --customize-hook="chroot \"\$1\" dpkg-query -W -f='\${Package}\n' | sort > \"$WORK/packages-after\"" \
    --customize-hook='chroot "$1" dpkg --purge linecap; rm -f "$1"/tmp/linecap.deb' \
    --customize-hook='echo linecap-vm > "$1"/etc/hostname; echo "/dev/vda / ext4 rw,errors=remount-ro 0 1" > "$1"/etc/fstab' \
    --customize-hook="install -d -m 0700 \"\$1\"/root/.ssh && install -m 0600 $WORK/id_ed25519.pub \"\$1\"/root/.ssh/authorized_keys" \
    --customize-hook="install -m 0644 $WORK/10-mgmt.network \"\$1\"/etc/systemd/network/10-mgmt.network" \
    --customize-hook='chroot "$1" systemctl enable systemd-networkd' \
    --customize-hook='chroot "$1" systemctl mask apt-daily.timer apt-daily-upgrade.timer man-db.timer fstrim.timer e2scrub_all.timer e2scrub_reap.service' \
    "$SUITE" "$WORK/rootfs.tar" "$MIRROR" >&2
comm -13 "$WORK/packages-before" "$WORK/packages-after" >"$WORK/packages-pulled"
log "apt install ./linecap.deb pulled $(wc -l <"$WORK/packages-pulled") packages"

log "ext4 image"
mkdir "$WORK/root"
tar -C "$WORK/root" --numeric-owner -xpf "$WORK/rootfs.tar"
kernels=("$WORK"/root/boot/vmlinuz-*)
cp "${kernels[-1]}" "$WORK/vmlinuz"
cp "$WORK/root/boot/initrd.img-${kernels[-1]##*/vmlinuz-}" "$WORK/initrd.img"
truncate -s 4G "$WORK/disk.img"
mkfs.ext4 -q -L linecap-vm -d "$WORK/root" "$WORK/disk.img"
rm -rf --one-file-system "$WORK/root"

echo $((SECONDS - start)) >"$WORK/build-seconds"
rm -rf "$DIR"
mkdir -p "$DIR"
mv "$WORK"/{rootfs.tar,disk.img,vmlinuz,initrd.img,id_ed25519,id_ed25519.pub,packages-pulled,build-seconds} "$DIR/"
# Older images (other keys) are dropped: one image is kept.
for old in "$IMAGES"/*/; do
    [[ ${old%/} == "$DIR" ]] || rm -rf --one-file-system "${old%/}"
done
log "built in $(cat "$DIR/build-seconds")s: $DIR"
echo "$DIR"
