#!/usr/bin/env bash
# shellcheck disable=SC2154  # fs and ext are set by mount_faultfs and mount_loop_ext4
# Self-test of the file systems that fail on command (tests/lib/common.sh): faultfs
# (tests/lib/linecap_harness/faultfs.py) and the ext4 loop device. Each fault is seen by a
# plain writer (dd, python): the errno it gets, what still works (reads; unlink under
# ENOSPC), a stall that holds a write for its seconds while reads go on, and the return to
# normal with the data intact. A test that fails with faultfs mounted leaves nothing
# mounted, and neither does one killed by SIGKILL (the reaper).
source "${LINECAP_SRC:?}/tests/lib/common.sh"
need_root
need_faultfs
make_tmpdir
mount_faultfs fs

# write_errno PATH [dd|append|fsync|create]: the errno name a writer gets ("ok" if none).
write_errno() {
    /usr/bin/python3 - "$@" <<'PY'
import errno, os, sys
path, how = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "append"
try:
    if how == "create":
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    else:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            if how != "fsync":
                os.write(fd, b"x" * 4096)
            os.fsync(fd)
        finally:
            os.close(fd)
    print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])
PY
}

dd if=/dev/urandom of="$TEST_TMPDIR/data" bs=64k count=16 status=none
dd if="$TEST_TMPDIR/data" of="$fs/a" bs=64k conv=fsync status=none || fail "dd into faultfs in mode ok failed"
cmp "$TEST_TMPDIR/data" "$fs/a" || fail "what dd wrote reads back different"
: >"$fs/scratch"
[[ $(write_errno "$fs/scratch") == ok ]] || fail "a write in mode ok failed"

for mode in eio enospc erofs; do
    want=${mode^^}
    faultfs_set "$fs" "$mode"
    [[ $("$FAULTFS" status "$fs") == "mode=$mode "* ]] || fail "status does not say $mode"
    for how in append fsync create; do
        got=$(write_errno "$fs/$([[ $how == create ]] && echo "new-$mode" || echo a)" "$how")
        [[ $got == "$want" ]] || fail "$mode: $how got $got, not $want"
    done
    err=$(dd if=/dev/zero of="$fs/a" bs=4k count=1 conv=notrunc,fsync 2>&1) && fail "$mode: dd succeeded"
    case $mode in
        eio) [[ $err == *"Input/output error"* ]] ;;
        enospc) [[ $err == *"No space left on device"* ]] ;;
        erofs) [[ $err == *"Read-only file system"* ]] ;;
    esac || fail "$mode: dd said: $err"
    cmp "$TEST_TMPDIR/data" "$fs/a" || fail "$mode: the file does not read back as written"
    [[ ! -e $fs/new-$mode ]] || fail "$mode: a refused create left a file"
    log "$mode: append, fsync, create and dd get $want; reads unchanged"
done

# ENOSPC: what frees space still works, and statfs says the disk is full.
faultfs_set "$fs" enospc
cp "$fs/a" "$TEST_TMPDIR/copy" # reading out of it
[[ $(stat -f -c %a "$fs") == 0 ]] || fail "enospc: statfs reports $(stat -f -c %a "$fs") free blocks"
faultfs_set "$fs" ok
cp "$TEST_TMPDIR/copy" "$fs/b"
faultfs_set "$fs" enospc
rm "$fs/b" || fail "enospc: unlink refused"
faultfs_set "$fs" erofs
[[ $(write_errno "$fs/a" fsync) == EROFS ]] || fail "erofs: fsync"
mv "$fs/a" "$fs/c" 2>/dev/null && fail "erofs: rename allowed"

# Stall: a write waits until the stall ends by itself; reads go on meanwhile.
faultfs_set "$fs" stall 3
start=$EPOCHREALTIME
write_errno "$fs/a" >"$TEST_TMPDIR/stalled.out" &
writer=$!
wait_for "[[ \$('$FAULTFS' status '$fs') == *' faults='[1-9]* ]]" 5 || fail "the stalled write never arrived"
cmp "$TEST_TMPDIR/data" <(head -c "$(stat -c %s "$TEST_TMPDIR/data")" "$fs/a") || fail "stall: a read was held"
_lc_alive "$writer" || fail "stall: the write returned before the stall ended"
wait "$writer"
held=$(echo "$EPOCHREALTIME - $start" | bc)
[[ $(cat "$TEST_TMPDIR/stalled.out") == ok ]] || fail "stall: the write failed: $(cat "$TEST_TMPDIR/stalled.out")"
[[ $(echo "$held >= 2.9" | bc) == 1 ]] || fail "stall: the write returned after ${held}s, not 3"
[[ $("$FAULTFS" status "$fs") == "mode=ok "* ]] || fail "stall: the mode did not return to ok by itself"
# ... and `ok` ends a long one at once.
faultfs_set "$fs" stall 60
write_errno "$fs/a" >"$TEST_TMPDIR/stalled.out" &
writer=$!
wait_for "[[ \$('$FAULTFS' status '$fs') == *' faults='[1-9]* ]]" 5 || fail "the second stalled write never arrived"
faultfs_set "$fs" ok
wait_for "! _lc_alive $writer" 5 || fail "ok did not release a stalled write"
[[ $(cat "$TEST_TMPDIR/stalled.out") == ok ]] || fail "a released write failed"
log "stall: a write held ${held}s of 3 while reads went on; ok releases a stall"

[[ $(write_errno "$fs/a") == ok ]] || fail "back to ok: a write failed"
mkdir "$fs/d" || fail "back to ok: mkdir"
mv "$fs/a" "$fs/d/a" || fail "back to ok: rename"
[[ -s $fs/d/a ]] || fail "back to ok: the renamed file is empty"

# A failing test's trap unmounts (here with a file held open in a stall), and so does the
# reaper after a SIGKILL.
for how in fail kill; do
    cat >"$TEST_TMPDIR/child.sh" <<EOF
source "$LINECAP_SRC/tests/lib/common.sh"
TEST_TMPDIR="$TEST_TMPDIR/child-$how"; mkdir -p "\$TEST_TMPDIR"
mount_faultfs m
echo "\$m" >"$TEST_TMPDIR/child.mnt"
exec 7>>"\$m/held"
faultfs_set "\$m" stall 30
[[ $how == kill ]] && { kill -KILL \$\$; }
fail "on purpose"
EOF
    rc=0
    bash "$TEST_TMPDIR/child.sh" >"$TEST_TMPDIR/child.log" 2>&1 || rc=$?
    ((rc != 0)) || fail "the child test passed"
    child=$(cat "$TEST_TMPDIR/child.mnt")
    wait_for "! grep -q ' $child fuse' /proc/mounts" 15 || fail "$how: $child still mounted: $(cat "$TEST_TMPDIR/child.log")"
done
log "a failing and a killed test leave nothing mounted"

# The ext4 loop device: read-only under a writer that holds a file open, then repaired.
need_cmd losetup mkfs.ext4 e2fsck
mount_loop_ext4 ext 32M
dd if="$TEST_TMPDIR/data" of="$ext/before" bs=64k conv=fsync status=none
exec 8>>"$ext/open.part"
echo start >&8
mount -o remount,ro "$ext" 2>/dev/null && fail "remount,ro succeeded with a file open for writing (the helper's premise)"
loop_ext4_fail "$ext"
echo more >&8 2>/dev/null && fail "a write to the read-only ext4 succeeded"
[[ $(write_errno "$ext/before") == EROFS ]] || fail "ext4 remount-ro: not EROFS"
cmp "$TEST_TMPDIR/data" "$ext/before" || fail "ext4 remount-ro: a file written before does not read back"
loop_ext4_repair "$ext"
exec 8>&-
cmp "$TEST_TMPDIR/data" "$ext/before" || fail "after repair: the file written before differs"
[[ $(write_errno "$ext/before") == ok ]] || fail "after repair: not writable"
log "OK: faultfs eio/enospc/erofs/stall seen by dd and python, ext4 remount-ro and repair on $LOOP_DEV"
