"""Starts one container's command in a private mount namespace with the pod's mounts in place.

Run as a script by its path (``python -I -S mount_launcher.py PLAN FD -- ARGV...``), before the
container's command: it uses the standard library only, so it starts in milliseconds and needs
nothing of rayop. PLAN is JSON (see :mod:`.mount_namespace`, which writes it): the mounts
(``target``, ``source``, ``readOnly``) in the order to make them, the directories where
creating a missing mount point is allowed (the plane's own directory, ``/tmp``), a staging
directory inside the pod's directory, and the working directory.

The launcher enters a new mount namespace (``unshare(CLONE_NEWNS)``), makes every mount in it
private (so nothing it mounts reaches the machine's namespace), bind-mounts each source at its
target and then ``exec``\\ s the command, which with every process it starts (Ray's daemons, the
workers and job supervisors they fork) sees the pod's files at their in-pod paths. A target
that does not exist is created where creating it is allowed; elsewhere (``/home``, ``/etc``,
``/run``) its deepest existing ancestor is covered, in this namespace only, by a tmpfs that
holds a bind mount of each of the ancestor's entries (same names, same files: writes to them
reach the machine as before) plus the new directories; the machine's tree is left untouched.

Any failure before ``exec`` is written to FD as ``<errno>\\n<message>`` and the launcher exits
127; FD is close-on-exec, so a parent that reads it to its end learns whether the command
started (nothing read) or why not. FD ``-`` writes the message to stderr instead (probes and
``kubectl exec``, whose output shows it). See mount(2), unshare(2) and mount_namespaces(7):
https://man7.org/linux/man-pages/man7/mount_namespaces.7.html
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import stat
import sys

CLONE_NEWNS = 0x00020000
MS_RDONLY = 0x1
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_MOVE = 0x2000
MS_REC = 0x4000
MS_PRIVATE = 0x40000

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    _check(
        _libc.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {source or fstype} on {target}",
    )


def unshare_mounts() -> None:
    """Enters a new mount namespace whose mounts are all private."""
    _check(_libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)


def _inside(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


class Mounter:
    """Makes the mounts of one plan in the current (already private) mount namespace."""

    def __init__(self, writable: list[str], staging: str) -> None:
        self.writable = [os.path.realpath(w) for w in writable]
        self.staging = staging
        self._mirrors = 0

    def _mirror(self, directory: str) -> None:
        """Covers ``directory`` with a tmpfs holding a bind mount of each of its entries."""
        self._mirrors += 1
        stage = os.path.join(self.staging, str(self._mirrors))
        os.makedirs(stage, exist_ok=True)
        info = os.stat(directory)
        _mount("tmpfs", stage, "tmpfs", 0, f"mode={stat.S_IMODE(info.st_mode):o}")
        os.chown(stage, info.st_uid, info.st_gid)
        for entry in os.scandir(directory):
            inside = os.path.join(stage, entry.name)
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), inside)
            elif entry.is_dir(follow_symlinks=False):
                os.mkdir(inside)
                _mount(entry.path, inside, None, MS_BIND | MS_REC)
            else:
                with open(inside, "w"):
                    pass
                _mount(entry.path, inside, None, MS_BIND)
        _mount(stage, directory, None, MS_MOVE)
        self.writable.append(directory)

    def ensure(self, target: str, is_dir: bool) -> None:
        """Creates the mount point ``target`` (and its missing parents)."""
        if os.path.lexists(target):
            return
        missing: list[str] = []
        ancestor = target
        while not os.path.exists(ancestor):
            missing.insert(0, os.path.basename(ancestor))
            ancestor = os.path.dirname(ancestor)
        ancestor = os.path.realpath(ancestor)
        if not _inside(ancestor, self.writable):
            if ancestor == "/":
                raise OSError(errno.EPERM, f"cannot create {target}: / is not covered")
            self._mirror(ancestor)
        path = ancestor
        for index, name in enumerate(missing):
            path = os.path.join(path, name)
            if index < len(missing) - 1 or is_dir:
                os.mkdir(path)
            else:
                with open(path, "w"):
                    pass

    def bind(self, source: str, target: str, read_only: bool) -> None:
        """Bind-mounts ``source`` at ``target`` (read-only when asked)."""
        self.ensure(target, os.path.isdir(source))
        _mount(source, target, None, MS_BIND | MS_REC)
        if read_only:
            _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY)
        if os.path.isdir(source) and _inside(os.path.realpath(source), self.writable):
            self.writable.append(target)


def _report(fd: int | None, exc: OSError) -> None:
    text = f"{exc.errno or 0}\n{exc.strerror or exc}"
    if fd is None:
        sys.stderr.write(text.partition("\n")[2] + "\n")
        return
    with os.fdopen(fd, "w") as out:
        out.write(text)


def main(args: list[str]) -> int:
    """Runs ``PLAN FD -- ARGV...`` (see the module docstring); returns only on failure."""
    plan = json.loads(args[0])
    fd = None if args[1] == "-" else int(args[1])
    argv = args[3:]
    if fd is not None:
        os.set_inheritable(fd, False)
    try:
        unshare_mounts()
        mounter = Mounter(list(plan["writable"]), str(plan["staging"]))
        for mount in plan["mounts"]:
            mounter.bind(str(mount["source"]), str(mount["target"]), bool(mount["readOnly"]))
        cwd = str(plan["cwd"])
        mounter.ensure(cwd, is_dir=True)
        os.chdir(cwd)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        _report(fd, OSError(exc.errno, f"mounting the pod's volumes failed: {exc.strerror}{where}"))
        return 127
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        _report(
            fd, OSError(exc.errno, exc.strerror if fd is not None else f"{argv[0]}: {exc.strerror}")
        )
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
