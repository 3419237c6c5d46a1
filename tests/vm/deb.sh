#!/usr/bin/env bash
# deb.sh: builds the Debian package of this source tree (dpkg-buildpackage -b -us -uc) and
# prints the path of linecap_*.deb. The tests of suite `vm` share it: the build happens in a
# fixed directory under the VM cache (so that ccache finds its objects from the last run) and
# is skipped when the tree's files have not changed since. LINECAP_DEB=FILE uses that
# package instead. Environment: LINECAP_SRC (the source tree), LINECAP_VM_CACHE (default
# /var/cache/linecap-vm).
set -euo pipefail

if [[ -n ${LINECAP_DEB:-} ]]; then
    realpath "$LINECAP_DEB"
    exit 0
fi
SRC=$(realpath "${LINECAP_SRC:-$(dirname "${BASH_SOURCE[0]}")/../..}")
CACHE_ROOT=${LINECAP_VM_CACHE:-/var/cache/linecap-vm}
OUT=$CACHE_ROOT/deb
mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9

log() { printf '%(%H:%M:%S)T deb: %s\n' -1 "$*" >&2; }

# The package's inputs: the tracked files as they are in the tree (edits included), but not
# what the package build never reads - the tests and benchmarks (debian/rules builds with
# -Dtests=false -Dbench=false), CI files, Markdown documents, the Dockerfile: editing those
# does not rebuild the package.
mapfile -d '' files < <(git -C "$SRC" ls-files -z --cached --others --exclude-standard -- \
    ':!tests/' ':!bench/' ':!.ci/' ':!*.md' ':!Dockerfile' ':!.dockerignore')
key=$(cd "$SRC" && for f in "${files[@]}"; do [[ -f $f ]] && printf '%s\0' "$f"; done \
    | xargs -0 sha256sum | sha256sum | cut -c1-16)
if [[ -f $OUT/key && $(cat "$OUT/key") == "$key" ]] && compgen -G "$OUT/linecap_*.deb" >/dev/null; then
    log "unchanged sources: $(echo "$OUT"/linecap_*.deb)"
    echo "$OUT"/linecap_*.deb
    exit 0
fi

log "dpkg-buildpackage in $OUT/src"
rm -rf "$OUT/src" "$OUT"/linecap_* "$OUT"/linecap-dbgsym_* "$OUT/key"
mkdir -p "$OUT/src"
(cd "$SRC" && for f in "${files[@]}"; do [[ -f $f ]] && printf '%s\0' "$f"; done) \
    | tar -C "$SRC" --null -T - -cf - | tar -C "$OUT/src" -xf -
start=$SECONDS
# debhelper (compat 13) points HOME into the tree it builds, which this script replaces on
# every build: ccache's default cache would sit there and start cold each time.
if command -v ccache >/dev/null 2>&1; then
    CCACHE_DIR=${CCACHE_DIR:-$(ccache -k cache_dir)}
    export CCACHE_DIR
fi
# noddebs: no linecap-dbgsym package (xz-compressing its debug symbols takes minutes).
(cd "$OUT/src" && DEB_BUILD_OPTIONS="noddebs ${DEB_BUILD_OPTIONS:-}" nice -n 10 dpkg-buildpackage -b -us -uc -j2 \
    >"$OUT/build.log" 2>&1) || {
    tail -30 "$OUT/build.log" >&2
    log "dpkg-buildpackage failed (log: $OUT/build.log)"
    exit 1
}
log "built in $((SECONDS - start))s"
echo "$key" >"$OUT/key"
echo "$OUT"/linecap_*.deb
