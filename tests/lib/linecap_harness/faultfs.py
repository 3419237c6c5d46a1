#!/usr/bin/python3
"""A fault-injecting FUSE file system for tests: a pass-through over a backing directory
that, on command, fails what changes the disk with EIO, ENOSPC or EROFS, or stalls it.

  faultfs.py mount BACKING MOUNTPOINT [--log FILE]   mount, serve in the background, return
  faultfs.py set MOUNTPOINT ok|eio|enospc|erofs|stall SECONDS
  faultfs.py status MOUNTPOINT                      the mode and the operations it failed or held
  faultfs.py umount MOUNTPOINT                      fusermount3 -u (lazy if busy), wait

Modes (each takes effect before `set` returns; `ok` ends any of them):
  ok        pass every operation through
  eio       write, fsync, create, mkdir, rename, unlink, truncate, ... fail with EIO (a
            dying disk; reads still work, so what was written stays readable)
  enospc    what allocates fails with ENOSPC (write, create, mkdir, link, fsync, a growing
            truncate) and statfs reports no free block; unlink and rename still work
  erofs     every change fails with EROFS, and so does an open for writing (ext4's
            errors=remount-ro as a program sees it)
  stall S   every change waits until S seconds after the `set`, then goes through (a
            stalled device); the mode returns to ok by itself then

Needs Debian's python3-pyfuse3 (and python3-trio) and fuse3 (fusermount3); it runs under
/usr/bin/python3, where Debian installs pyfuse3. The mount process listens on a Unix socket
named after the mount point (/tmp/linecap-faultfs/<hash>.sock); `set` talks to it.
tests/lib/common.sh wraps it: mount_faultfs, faultfs_set (tests/README.md).
"""
import argparse
import errno
import hashlib
import os
import socket
import stat
import subprocess
import sys
import time

RUN_DIR = os.environ.get("LINECAP_FAULTFS_RUN", "/tmp/linecap-faultfs")
MODES = ("ok", "eio", "enospc", "erofs", "stall")


def control_path(mountpoint):
    real = os.path.realpath(mountpoint)
    return os.path.join(RUN_DIR, hashlib.sha1(real.encode()).hexdigest()[:16] + ".sock")


def _ask(mountpoint, line, timeout=10.0):
    """One request over the control socket; returns the answer line."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(control_path(mountpoint))
        s.sendall(line.encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return data.decode().strip()
    finally:
        s.close()


def _mounted(mountpoint):
    real = os.path.realpath(mountpoint)
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == real and line.split()[2].startswith("fuse") for line in f)


# --- the file system (imported only by the serving process) ---------------------------------

def serve(backing, mountpoint, ready_fd):
    import pyfuse3
    import trio

    FUSEError = pyfuse3.FUSEError
    # Named before the mount: once mounted, this process must not touch its own mount point
    # (realpath's lstat would wait for the server that is this process).
    ctl = control_path(mountpoint)
    CHANGE_OPS = {"write", "create", "mknod", "mkdir", "symlink", "link", "rename", "unlink",
                  "rmdir", "setattr", "fsync", "fsyncdir"}
    # What ENOSPC leaves working: removing and renaming free or move space, they take none.
    ENOSPC_FREE = {"rename", "unlink", "rmdir", "setattr_shrink"}

    class State:
        mode = "ok"
        until = 0.0       # stall: monotonic deadline
        wake = None       # stall: trio.Event set when it ends
        faults = 0        # operations failed or stalled since the mode was set

    st = State()

    async def gate(op):
        """Apply the mode to one changing operation: raise, wait, or pass."""
        if st.mode == "ok":
            return
        if st.mode == "stall":
            st.faults += 1
            delay = st.until - time.monotonic()
            if delay > 0:
                with trio.move_on_after(delay):
                    await st.wake.wait()
            if st.mode == "stall" and time.monotonic() >= st.until:
                st.mode = "ok"
            return
        if st.mode == "enospc" and op in ENOSPC_FREE:
            return
        st.faults += 1
        raise FUSEError({"eio": errno.EIO, "enospc": errno.ENOSPC, "erofs": errno.EROFS}[st.mode])

    def oserr(e):
        return FUSEError(e.errno or errno.EIO)

    class FaultFS(pyfuse3.Operations):
        supports_dot_lookup = True
        enable_writeback_cache = False

        def __init__(self):
            super().__init__()
            self.paths = {pyfuse3.ROOT_INODE: backing}
            self.by_key = {}
            root = os.lstat(backing)
            self.by_key[(root.st_dev, root.st_ino)] = pyfuse3.ROOT_INODE
            self.next_ino = pyfuse3.ROOT_INODE + 1

        # inodes: ours, one per backing (dev, ino); the path it was last seen at
        def path(self, inode):
            try:
                return self.paths[inode]
            except KeyError:
                raise FUSEError(errno.ENOENT)

        def child(self, parent, name):
            return os.path.join(self.path(parent), os.fsdecode(name))

        def attrs(self, path):
            try:
                s = os.lstat(path)
            except OSError as e:
                raise oserr(e)
            key = (s.st_dev, s.st_ino)
            inode = self.by_key.get(key)
            if inode is None:
                inode = self.next_ino
                self.next_ino += 1
                self.by_key[key] = inode
            self.paths[inode] = path
            a = pyfuse3.EntryAttributes()
            a.st_ino = inode
            a.generation = 0
            a.entry_timeout = 0.5
            a.attr_timeout = 0.5
            for f in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_rdev", "st_size",
                      "st_atime_ns", "st_mtime_ns", "st_ctime_ns"):
                setattr(a, f, getattr(s, f))
            a.st_blksize = s.st_blksize
            a.st_blocks = s.st_blocks
            return a

        def moved(self, old, new):
            for inode, p in list(self.paths.items()):
                if p == old or p.startswith(old + "/"):
                    self.paths[inode] = new + p[len(old):]

        async def lookup(self, parent, name, ctx=None):
            if name == b".":
                return self.attrs(self.path(parent))
            if name == b"..":
                return self.attrs(os.path.dirname(self.path(parent)) if parent != pyfuse3.ROOT_INODE
                                  else backing)
            return self.attrs(self.child(parent, name))

        async def getattr(self, inode, ctx=None):
            return self.attrs(self.path(inode))

        async def forget(self, inode_list):
            pass  # inodes are kept: a test's file system is small

        async def setattr(self, inode, attr, fields, fh, ctx):
            path = self.path(inode)
            if fields.update_size:
                shrink = attr.st_size <= os.lstat(path).st_size
                await gate("setattr_shrink" if shrink else "setattr")
            elif fields.update_mode or fields.update_uid or fields.update_gid:
                await gate("setattr")
            try:
                if fields.update_size:
                    if fh is not None:
                        os.ftruncate(fh, attr.st_size)
                    else:
                        os.truncate(path, attr.st_size)
                if fields.update_mode:
                    os.chmod(path, stat.S_IMODE(attr.st_mode))
                if fields.update_uid or fields.update_gid:
                    os.chown(path, attr.st_uid if fields.update_uid else -1,
                             attr.st_gid if fields.update_gid else -1, follow_symlinks=False)
                if fields.update_atime or fields.update_mtime:
                    s = os.lstat(path)
                    os.utime(path, ns=(attr.st_atime_ns if fields.update_atime else s.st_atime_ns,
                                       attr.st_mtime_ns if fields.update_mtime else s.st_mtime_ns),
                             follow_symlinks=False)
            except OSError as e:
                raise oserr(e)
            return self.attrs(path)

        async def readlink(self, inode, ctx):
            try:
                return os.fsencode(os.readlink(self.path(inode)))
            except OSError as e:
                raise oserr(e)

        async def opendir(self, inode, ctx):
            self.path(inode)
            return inode

        async def readdir(self, fh, start_id, token):
            path = self.path(fh)
            try:
                names = sorted(os.listdir(path))
            except OSError as e:
                raise oserr(e)
            for i, name in enumerate(names[start_id:], start_id):
                try:
                    a = self.attrs(os.path.join(path, name))
                except FUSEError:
                    continue
                if not pyfuse3.readdir_reply(token, os.fsencode(name), a, i + 1):
                    break

        async def releasedir(self, fh):
            pass

        async def change(self, op, call, *args):
            """One changing operation: the mode's gate, then CALL(*ARGS) with its errno."""
            await gate(op)
            try:
                return call(*args)
            except OSError as e:
                raise oserr(e)

        async def mkdir(self, parent, name, mode, ctx):
            path = self.child(parent, name)
            await self.change("mkdir", os.mkdir, path, mode)
            return self.attrs(path)

        async def mknod(self, parent, name, mode, rdev, ctx):
            path = self.child(parent, name)
            await self.change("mknod", os.mknod, path, mode, rdev)
            return self.attrs(path)

        async def rmdir(self, parent, name, ctx):
            await self.change("rmdir", os.rmdir, self.child(parent, name))

        async def unlink(self, parent, name, ctx):
            await self.change("unlink", os.unlink, self.child(parent, name))

        async def symlink(self, parent, name, target, ctx):
            path = self.child(parent, name)
            await self.change("symlink", os.symlink, os.fsdecode(target), path)
            return self.attrs(path)

        async def link(self, inode, new_parent, new_name, ctx):
            path = self.child(new_parent, new_name)
            await self.change("link", os.link, self.path(inode), path)
            return self.attrs(path)

        async def rename(self, parent_old, name_old, parent_new, name_new, flags, ctx):
            await gate("rename")
            old, new = self.child(parent_old, name_old), self.child(parent_new, name_new)
            try:
                if flags & pyfuse3.RENAME_NOREPLACE and os.path.lexists(new):
                    raise FUSEError(errno.EEXIST)
                if flags & pyfuse3.RENAME_EXCHANGE:
                    raise FUSEError(errno.EINVAL)
                os.rename(old, new)
            except OSError as e:
                raise oserr(e)
            self.moved(old, new)

        async def statfs(self, ctx):
            s = os.statvfs(backing)
            d = pyfuse3.StatvfsData()
            for f in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files",
                      "f_ffree", "f_favail", "f_namemax"):
                setattr(d, f, getattr(s, f))
            if st.mode == "enospc":
                d.f_bfree = d.f_bavail = 0
            return d

        async def open(self, inode, flags, ctx):
            if st.mode == "erofs" and (flags & (os.O_WRONLY | os.O_RDWR | os.O_TRUNC)):
                st.faults += 1
                raise FUSEError(errno.EROFS)
            try:
                fd = os.open(self.path(inode), flags & ~(os.O_CREAT | os.O_EXCL | os.O_NOCTTY))
            except OSError as e:
                raise oserr(e)
            return pyfuse3.FileInfo(fh=fd)

        async def create(self, parent, name, mode, flags, ctx):
            await gate("create")
            path = self.child(parent, name)
            try:
                fd = os.open(path, flags | os.O_CREAT, mode)
            except OSError as e:
                raise oserr(e)
            return pyfuse3.FileInfo(fh=fd), self.attrs(path)

        async def read(self, fh, off, size):
            try:
                return os.pread(fh, size, off)
            except OSError as e:
                raise oserr(e)

        async def write(self, fh, off, buf):
            return await self.change("write", os.pwrite, fh, buf, off)

        async def flush(self, fh):
            pass

        async def fsync(self, fh, datasync):
            await self.change("fsync", os.fdatasync if datasync else os.fsync, fh)

        async def fsyncdir(self, fh, datasync):
            await gate("fsyncdir")

        async def release(self, fh):
            try:
                os.close(fh)
            except OSError:
                pass

    async def control(server):
        """One line per connection: set MODE [S] | status | ping; answers one line."""
        while True:
            conn, _ = await server.accept()
            await answer(conn)

    async def answer(conn):
        with conn:
            data = b""
            while not data.endswith(b"\n"):
                chunk = await conn.recv(4096)
                if not chunk:
                    break
                data += chunk
            words = data.decode().split()
            reply = "error: empty request"
            if words and words[0] == "set" and len(words) >= 2 and words[1] in MODES:
                if st.wake is not None:
                    st.wake.set()  # whatever was stalled goes on (or meets the new mode)
                st.wake = trio.Event()
                st.mode = words[1]
                st.faults = 0
                if st.mode == "stall":
                    st.until = time.monotonic() + float(words[2] if len(words) > 2 else 10)
                reply = "ok " + " ".join(words[1:])
                print(f"faultfs {mountpoint}: {reply}", flush=True)
            elif words and words[0] == "status":
                if st.mode == "stall" and time.monotonic() >= st.until:
                    st.mode = "ok"
                reply = f"mode={st.mode} faults={st.faults}"
            elif words and words[0] == "ping":
                reply = "pong"
            elif words:
                reply = f"error: unknown request {' '.join(words)}"
            await conn.send(reply.encode() + b"\n")

    async def main():
        os.makedirs(RUN_DIR, exist_ok=True)
        path = ctl
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        server = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        await server.bind(path)
        server.listen(16)
        os.write(ready_fd, b"ready\n")
        os.close(ready_fd)
        try:
            async with trio.open_nursery() as n:
                n.start_soon(control, server)
                await pyfuse3.main(max_tasks=256)
                n.cancel_scope.cancel()
        finally:
            server.close()
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    options = set(pyfuse3.default_options)
    options.update({"fsname=faultfs", "allow_other"})
    pyfuse3.init(FaultFS(), mountpoint, options)
    try:
        trio.run(main)
    finally:
        pyfuse3.close(unmount=False)


# --- the command line ----------------------------------------------------------------------

def cmd_mount(args):
    backing, mountpoint = os.path.realpath(args.backing), os.path.realpath(args.mountpoint)
    if not os.path.isdir(backing) or not os.path.isdir(mountpoint):
        sys.exit(f"faultfs: {args.backing} and {args.mountpoint} must be directories")
    try:
        import pyfuse3  # noqa: F401  (fail here, in the foreground, with a clear reason)
        import trio  # noqa: F401
    except ImportError as e:
        print(f"faultfs: {e} (apt-get install python3-pyfuse3 fuse3)", file=sys.stderr)
        sys.exit(77)
    r, w = os.pipe()
    log = open(args.log or os.devnull, "ab")
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "_serve", backing, mountpoint,
                             str(w)], pass_fds=(w,), stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    os.close(w)
    ready = os.read(r, 64)
    os.close(r)
    deadline = time.monotonic() + 20
    while not (ready and _mounted(mountpoint)):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            sys.exit(f"faultfs: mounting {mountpoint} failed (status {proc.poll()}; see {args.log or 'its --log'})")
        time.sleep(0.02)
    with open(control_path(mountpoint) + ".pid", "w") as f:
        f.write(f"{proc.pid}\n")
    print(proc.pid)


def cmd_set(args):
    if args.mode == "stall" and args.seconds is None:
        sys.exit("faultfs: stall needs SECONDS")
    reply = _ask(args.mountpoint, " ".join(["set", args.mode] + ([str(args.seconds)] if args.seconds is not None else [])))
    if not reply.startswith("ok"):
        sys.exit(f"faultfs: {reply}")


def cmd_status(args):
    print(_ask(args.mountpoint, "status"))


def cmd_umount(args):
    mountpoint = os.path.realpath(args.mountpoint)
    pidfile = control_path(mountpoint) + ".pid"
    try:
        pid = int(open(pidfile).read())
    except (OSError, ValueError):
        pid = None
    try:
        _ask(mountpoint, "set ok", timeout=2)  # no stalled request holds the unmount
    except OSError:
        pass
    if _mounted(mountpoint):
        if subprocess.run(["fusermount3", "-u", mountpoint], stderr=subprocess.DEVNULL).returncode != 0:
            subprocess.run(["fusermount3", "-u", "-z", mountpoint], stderr=subprocess.DEVNULL)
    if pid is not None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
    for leftover in (pidfile, control_path(mountpoint)):  # a killed server leaves its socket
        try:
            os.unlink(leftover)
        except FileNotFoundError:
            pass
    if _mounted(mountpoint):
        sys.exit(f"faultfs: {mountpoint} is still mounted")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_serve":
        serve(argv[1], argv[2], int(argv[3]))
        return
    p = argparse.ArgumentParser(prog="faultfs.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("mount", help="mount BACKING on MOUNTPOINT and serve it in the background")
    m.add_argument("backing")
    m.add_argument("mountpoint")
    m.add_argument("--log", help="the server's output (default: none)")
    m.set_defaults(func=cmd_mount)
    s = sub.add_parser("set", help="change the mode")
    s.add_argument("mountpoint")
    s.add_argument("mode", choices=MODES)
    s.add_argument("seconds", nargs="?", type=float)
    s.set_defaults(func=cmd_set)
    t = sub.add_parser("status", help="print the mode and how many operations it failed or held")
    t.add_argument("mountpoint")
    t.set_defaults(func=cmd_status)
    u = sub.add_parser("umount", help="unmount (lazily if busy) and wait for the server to end")
    u.add_argument("mountpoint")
    u.set_defaults(func=cmd_umount)
    args = p.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
