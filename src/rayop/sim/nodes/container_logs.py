"""The simulated kubelet's container log files: what ``pods/log`` reads.

Every container instance (a container name and its restart count) has one :class:`ContainerLog`:
timestamped lines appended while it runs, closed when it ends. Whatever produces a container's
output writes through the small :class:`LogSink` interface, which is all a producer needs: the
simulated kubelet writes the command it would run and the exit reason, the submitter simulator
writes ``ray job submit``'s output, and a real process (``rayop up --real-ray``) can write its
stdout and stderr the same way. Readers (:meth:`ContainerLog.read`, :meth:`ContainerLog.follow`)
apply kube-apiserver's ``PodLogOptions`` (tailLines, sinceSeconds/sinceTime, timestamps,
limitBytes) as the kubelet does.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

__all__ = [
    "ContainerLog",
    "LogQuery",
    "LogSink",
    "PodLogs",
    "format_log_timestamp",
]

MAX_LOG_BYTES = 1 << 20
"""Bytes kept per container instance; older lines are dropped (the kubelet rotates its files)."""


class LogSink(Protocol):
    """Where one container instance's output goes (the interface every producer uses)."""

    def write(self, data: str | bytes, *, at: float | None = None) -> None:
        """Appends output; each line (a trailing newline is added if missing) is stamped
        ``at`` (epoch seconds, now when None)."""

    def close(self) -> None:
        """Marks the instance ended: followers get the rest and their stream ends."""


def format_log_timestamp(at: float) -> str:
    """Formats epoch seconds as the kubelet prefixes log lines (RFC 3339, nanoseconds, UTC)."""
    whole = int(at)
    nanos = round((at - whole) * 1e9)
    if nanos >= 1_000_000_000:
        whole, nanos = whole + 1, nanos - 1_000_000_000
    stamp = datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{nanos:09d}Z"


@dataclass(frozen=True, kw_only=True)
class LogQuery:
    """The ``PodLogOptions`` a read applies (kube-apiserver's names; None: not given)."""

    tail_lines: int | None = None
    since: float | None = None
    """Epoch seconds: only lines written at or after it (from sinceSeconds or sinceTime)."""
    timestamps: bool = False
    limit_bytes: int | None = None


@dataclass(frozen=True)
class _Line:
    at: float
    data: bytes


class ContainerLog:
    """The output of one container instance (implements :class:`LogSink`).

    Args:
        container: The container's name.
        restart: Its restart count when this instance started.
    """

    def __init__(self, container: str, restart: int = 0) -> None:
        self.container = container
        self.restart = restart
        self._lines: deque[_Line] = deque()
        self._bytes = 0
        self._dropped = 0
        self._partial = b""
        self.closed = False
        self._changed = asyncio.Event()

    # -- the sink side ------------------------------------------------------------------------

    def write(self, data: str | bytes, *, at: float | None = None) -> None:
        """Appends output; see :meth:`LogSink.write`. Writes after :meth:`close` are ignored."""
        if self.closed:
            return
        raw = data.encode() if isinstance(data, str) else data
        if not raw:
            return
        stamp = time.time() if at is None else at
        if not raw.endswith(b"\n"):
            raw += b"\n"
        for piece in raw.splitlines(keepends=True):
            self._append(_Line(stamp, piece))
        self._wake()

    def close(self) -> None:
        """Marks the instance ended (idempotent)."""
        if not self.closed:
            self.closed = True
            self._wake()

    def _append(self, line: _Line) -> None:
        self._lines.append(line)
        self._bytes += len(line.data)
        while self._bytes > MAX_LOG_BYTES and len(self._lines) > 1:
            self._bytes -= len(self._lines.popleft().data)
            self._dropped += 1

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    # -- the reader side ----------------------------------------------------------------------

    def read(self, query: LogQuery | None = None) -> bytes:
        """Returns what a non-follow request gets: the selected lines, at most limitBytes."""
        q = query or LogQuery()
        out = b"".join(_render(line, q) for line in self._select(q))
        return out if q.limit_bytes is None else out[: q.limit_bytes]

    def _select(self, q: LogQuery) -> list[_Line]:
        lines = [ln for ln in self._lines if q.since is None or ln.at >= q.since]
        if q.tail_lines is not None:
            lines = lines[len(lines) - q.tail_lines :] if q.tail_lines else []
        return lines

    async def follow(self, query: LogQuery | None = None) -> AsyncIterator[bytes]:
        """Yields the selected lines, then every new one until the instance closes.

        Stops early once limitBytes have been yielded. Never blocks the writer.
        """
        q = query or LogQuery()
        budget = q.limit_bytes
        pending = self._select(q)
        position = self._dropped + len(self._lines)
        while True:
            changed = self._changed
            for line in pending:
                chunk = _render(line, q)
                if budget is not None:
                    chunk = chunk[:budget]
                    budget -= len(chunk)
                yield chunk
                if budget is not None and budget <= 0:
                    return
            if self.closed and position == self._dropped + len(self._lines):
                return
            if position == self._dropped + len(self._lines):
                await changed.wait()
            start = max(0, position - self._dropped)
            pending = list(self._lines)[start:]
            position = self._dropped + len(self._lines)


def _render(line: _Line, q: LogQuery) -> bytes:
    if q.timestamps:
        return format_log_timestamp(line.at).encode() + b" " + line.data
    return line.data


class PodLogs:
    """Every container instance's log, by pod uid and container name.

    The kubelet opens an instance when a container starts and closes it when it ends; a pod's
    logs are forgotten when the pod is gone. ``previous`` reads the instance before the current.
    """

    KEEP_INSTANCES = 2

    def __init__(self) -> None:
        self._pods: dict[str, dict[str, list[ContainerLog]]] = {}

    def open(self, uid: str, container: str, restart: int = 0) -> ContainerLog:
        """Starts a new instance of a container (closing the one before); returns its sink.

        Opening the instance already open (same restart count) returns it unchanged.
        """
        instances = self._pods.setdefault(uid, {}).setdefault(container, [])
        if instances and instances[-1].restart == restart and not instances[-1].closed:
            return instances[-1]
        for old in instances:
            old.close()
        log = ContainerLog(container, restart)
        instances.append(log)
        del instances[: -self.KEEP_INSTANCES]
        return log

    def current(self, uid: str, container: str) -> ContainerLog | None:
        """Returns the latest instance of a container, or None when it never started."""
        instances = self._pods.get(uid, {}).get(container)
        return instances[-1] if instances else None

    def previous(self, uid: str, container: str) -> ContainerLog | None:
        """Returns the instance before the latest (a restarted container's last run), or None."""
        instances = self._pods.get(uid, {}).get(container) or []
        return instances[-2] if len(instances) > 1 else None

    def close_pod(self, uid: str) -> None:
        """Closes every open instance of a pod (its containers ended)."""
        for instances in self._pods.get(uid, {}).values():
            for log in instances:
                log.close()

    def forget(self, uid: str) -> None:
        """Closes and drops every log of a pod (the pod is gone)."""
        self.close_pod(uid)
        self._pods.pop(uid, None)

    def __len__(self) -> int:
        return len(self._pods)
