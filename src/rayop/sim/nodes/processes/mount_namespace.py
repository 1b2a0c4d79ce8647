"""A container's private mount namespace: the plan of its mounts and the command that applies it.

Under ``--real-ray`` each container's command starts through :mod:`.mount_launcher` (see there
for what it does), so what a process of the container opens at an in-pod path
(``/var/run/secrets/kubernetes.io/serviceaccount/token``, ``/home/ray/jobs/counter.py``,
``/etc/ray/tls/tls.crt``) is the pod's file, for every process it starts as well.
:class:`MountPlan` is what the launcher is given; :func:`launcher_argv` is the command that
runs ``argv`` under it; :func:`namespace_support` tells, once per plane, whether this machine
lets the plane make mount namespaces at all (root, and a kernel and sandbox that allow
``unshare(CLONE_NEWNS)`` and bind mounts).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["LAUNCHER", "MountPlan", "launcher_argv", "namespace_support"]

LAUNCHER = Path(__file__).with_name("mount_launcher.py")
"""The launcher script, run by path with this interpreter (``-I -S``: nothing but the stdlib)."""


@dataclass(frozen=True)
class MountPlan:
    """The mounts of one container, in the order the launcher makes them.

    Attributes:
        mounts: In-pod path -> directory or file on this machine.
        read_only: The in-pod paths mounted read-only.
        writable: Directories of this machine where a missing mount point may be created (the
            plane's own directory, ``/tmp``); elsewhere the launcher covers the parent instead.
        staging: A directory of the pod the launcher may use for its tmpfs mounts.
        cwd: The working directory inside the namespace.
    """

    mounts: Mapping[str, str]
    read_only: frozenset[str] = frozenset()
    writable: Sequence[str] = field(default_factory=tuple)
    staging: str = ""
    cwd: str = "/"

    def ordered(self) -> list[tuple[str, str]]:
        """The mounts, parents before what is mounted inside them."""
        chosen = {t.rstrip("/") or "/": s for t, s in self.mounts.items() if t.startswith("/")}
        return sorted(chosen.items(), key=lambda item: (item[0].count("/"), item[0]))

    def to_json(self) -> str:
        """The plan as the launcher reads it."""
        return json.dumps(
            {
                "mounts": [
                    {"target": t, "source": s, "readOnly": t in self.read_only}
                    for t, s in self.ordered()
                ],
                "writable": list(self.writable),
                "staging": self.staging,
                "cwd": self.cwd,
            }
        )


def launcher_argv(plan: MountPlan, status_fd: int | None, argv: Sequence[str]) -> list[str]:
    """The command that runs ``argv`` in a new mount namespace made by ``plan``.

    ``status_fd`` receives why the command could not start (None: its stderr does).
    """
    fd = "-" if status_fd is None else str(status_fd)
    return [sys.executable, "-I", "-S", str(LAUNCHER), plan.to_json(), fd, "--", *argv]


def namespace_support(scratch: Path) -> str | None:
    """Returns None when a private mount namespace with a bind mount can be made here, else why.

    ``scratch`` is a directory the check may make and mount on (removed again).
    """
    source = scratch / "source"
    target = scratch / "target"
    source.mkdir(parents=True, exist_ok=True)
    plan = MountPlan({str(target): str(source)}, writable=(str(scratch),), staging=str(scratch))
    try:
        done = subprocess.run(
            launcher_argv(plan, None, ["true"]),
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": os.environ.get("PATH", os.defpath)},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    finally:
        for path in (target, source, scratch):
            with contextlib.suppress(OSError):
                path.rmdir()
    if done.returncode != 0:
        return (done.stderr.strip() or f"exit status {done.returncode}").splitlines()[-1]
    return None
