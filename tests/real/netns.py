"""A private network namespace for processes that listen on fixed ports.

Some of KubeRay's tools listen on ports they do not let you choose (the history server on
``:8080``); on a shared machine another process may hold them. :class:`NetNs` holds a fresh
network namespace (``unshare --net``, its loopback brought up) for the duration of a test
module; :meth:`NetNs.popen` and :meth:`NetNs.run` start processes inside it (``nsenter``), so
their ports are private, and :meth:`NetNs.get` fetches a URL from inside it. Needs root (or
unprivileged user namespaces) and util-linux; when the namespace cannot be made, the tests
that need it fail saying why.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["NetNs"]


class NetNs:
    """A network namespace held by a sleeping process (see the module docstring)."""

    def __init__(self) -> None:
        self._holder = subprocess.Popen(
            [
                "unshare",
                "--net",
                "--fork",
                "--kill-child",
                "--",
                "sh",
                "-c",
                "ip link set lo up && exec sleep 86400",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 10
        while (
            "UP" not in (probe := self.run(["ip", "-o", "link", "show", "lo"], check=False)).stdout
        ):
            if self._holder.poll() is not None or time.monotonic() > deadline:
                why = probe.stderr.strip()
                if not why and self._holder.poll() is not None and self._holder.stderr:
                    why = self._holder.stderr.read()
                self.close()
                raise RuntimeError(f"no network namespace here: {why}")
            time.sleep(0.1)

    def _enter(self, argv: Sequence[str]) -> list[str]:
        return ["nsenter", f"--net=/proc/{self._holder.pid}/ns/net", "--", *argv]

    def popen(self, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[str]:
        """Starts ``argv`` inside the namespace (``subprocess.Popen`` arguments, text mode)."""
        return subprocess.Popen(self._enter(argv), text=True, **kwargs)

    def run(
        self, argv: Sequence[str], *, check: bool = True, timeout: float = 120, **kwargs: Any
    ) -> subprocess.CompletedProcess[str]:
        """Runs ``argv`` inside the namespace to its end; captures its output."""
        return subprocess.run(
            self._enter(argv),
            capture_output=True,
            text=True,
            check=check,
            timeout=timeout,
            **kwargs,
        )

    def get(self, url: str, *, cookies: str | None = None) -> tuple[int, str]:
        """GETs ``url`` from inside the namespace; returns (status, body). ``cookies`` names a
        cookie jar file curl reads and writes."""
        jar = ["-b", cookies, "-c", cookies] if cookies else []
        out = self.run(
            ["curl", "-s", "-m", "30", *jar, "-w", "\n%{http_code}", url], check=False
        ).stdout
        body, _, status = out.rpartition("\n")
        return int(status or 0), body

    def close(self) -> None:
        """Ends the holder process; the namespace goes with its last process."""
        if self._holder.poll() is None:
            self._holder.kill()
        self._holder.wait(timeout=10)
        if self._holder.stderr is not None:
            self._holder.stderr.close()
