"""Makes a child process end with its parent, whatever signal ends the parent.

``rayop bench`` starts ``rayop apiserver`` as a child. A parent that ends through SIGTERM (as
``timeout`` and CI runners send), SIGKILL or a crash never runs its ``__aexit__``, so the child
would keep running at full CPU. On Linux the child asks the kernel, between ``fork`` and
``exec``, to send it SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``); the setting
survives ``exec``. If the parent had already died before the call, the child exits at once.
Elsewhere the kernel offers no such call, and :func:`end_with_parent` says so by raising.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
"""The ``prctl`` option (``<linux/prctl.h>``) that sets the parent-death signal."""


class ChildLifetimeUnsupported(RuntimeError):
    """The platform cannot tie a child's lifetime to its parent's."""


def end_with_parent(sig: int = signal.SIGKILL) -> Callable[[], None]:
    """Returns a ``preexec_fn`` that makes the child receive ``sig`` when this process dies.

    Args:
        sig: The signal the kernel sends the child; SIGKILL by default, so nothing the child
            does (a slow shutdown, a blocked handler) can keep it alive.

    Returns:
        A function for ``subprocess.Popen(preexec_fn=...)`` or
        ``asyncio.create_subprocess_exec(preexec_fn=...)``. It only calls async-signal-safe
        system calls (``prctl``, ``getppid``, ``_exit``), as code between fork and exec must.

    Raises:
        ChildLifetimeUnsupported: not on Linux, or libc has no ``prctl``.
    """
    if not sys.platform.startswith("linux"):
        raise ChildLifetimeUnsupported(
            f"a child cannot be tied to its parent's lifetime on {sys.platform}: "
            "PR_SET_PDEATHSIG is Linux-only"
        )
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    prctl = getattr(libc, "prctl", None)
    if prctl is None:
        raise ChildLifetimeUnsupported("libc has no prctl")
    parent = os.getpid()

    def in_child() -> None:
        if prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
            os._exit(127)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return in_child
