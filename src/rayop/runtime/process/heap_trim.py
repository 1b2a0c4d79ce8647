"""Returns the C heap's free pages to the operating system now and then, as Go's scavenger does.

CPython hands every allocation over 512 bytes (JSON bodies, decoded objects' key tables, the
compact cache's blobs) to the C library's ``malloc``. glibc keeps what is freed for reuse and
gives back to the kernel only the free space at the very top of its heap, so after a burst
(a thousand pods created, their watch events decoded and dropped) a long-running process keeps
tens of megabytes of free but resident pages between the live blocks: measured on a converged
operator with 1,100 cached pods on a real kube-apiserver, 112.5 MiB resident of which 28.5 MiB
came back with one ``malloc_trim(0)`` (``benchmarks/operator_memory_profile.py``). The Go
runtime an operator written in Go runs on does this by itself (its background scavenger
returns unused heap pages to the OS); :func:`trim_heap_periodically` does it for a Python
process on glibc, and does nothing where ``malloc_trim`` does not exist (musl, macOS). It
trims only after the resident set has grown (:class:`HeapTrimmer`), so an idle operator pays
nothing but a small file read per check.
"""

from __future__ import annotations

import ctypes
import logging
import os
from collections.abc import Callable

from rayop.runtime.clock import MONOTONIC, Clock

log = logging.getLogger(__name__)

DEFAULT_CHECK_INTERVAL = 5.0
"""Seconds between two looks at the resident set size (a read of ``/proc/self/statm``)."""

DEFAULT_GROWTH = 8 * 2**20
"""Bytes the RSS must grow past its size after the last trim before the heap is trimmed again.

A trim walks the whole heap (about 5 ms for a 50 MB operator heap, 70 ms for 400 MB measured on
this machine even when nothing is freed), so it is paid only after growth: an idle operator
reads one small file per check and never trims; growth that is live data is trimmed once per
this many bytes and then becomes the new baseline.
"""


def find_malloc_trim() -> Callable[[], int] | None:
    """Returns glibc's ``malloc_trim(0)`` as a callable, or None when the C library has none.

    The symbol is looked up among those the interpreter already has loaded (``dlopen(NULL)``,
    its C library's included): ``ctypes.util.find_library`` would run ``ldconfig -p`` in a
    child process (~6 ms) during the operator's start-up.
    """
    try:
        function = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_size_t]
    function.restype = ctypes.c_int

    def trim() -> int:
        return int(function(0))

    return trim


def resident_bytes() -> int:
    """Returns this process's resident set size in bytes (Linux's ``/proc/self/statm``)."""
    with open("/proc/self/statm", "rb") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class HeapTrimmer:
    """Trims the C heap whenever the RSS has grown by ``growth`` bytes since the last trim.

    Args:
        trim: The trim function; default: glibc's ``malloc_trim(0)``, found once.
        rss: Reads the resident set size in bytes; default: :func:`resident_bytes`.
        growth: Bytes of RSS growth past the last trimmed size that call for a trim.
    """

    def __init__(
        self,
        *,
        trim: Callable[[], int] | None = None,
        rss: Callable[[], int] = resident_bytes,
        growth: int = DEFAULT_GROWTH,
    ) -> None:
        self._trim = trim or find_malloc_trim()
        self._rss = rss
        self._growth = growth
        self._baseline: int | None = None
        self.trims = 0
        """How many trims were made."""
        self.released_bytes = 0
        """The RSS the trims gave back, in total."""

    @property
    def available(self) -> bool:
        """Tells whether there is a trim function (glibc) at all."""
        return self._trim is not None

    def check(self) -> bool:
        """Trims the heap if the RSS grew enough since the last trim; tells whether it did."""
        if self._trim is None:
            return False
        before = self._rss()
        if self._baseline is not None and before < self._baseline + self._growth:
            self._baseline = min(self._baseline, before)
            return False
        self._trim()
        after = self._rss()
        self.trims += 1
        self.released_bytes += max(0, before - after)
        self._baseline = after
        return True


async def trim_heap_periodically(
    *,
    clock: Clock = MONOTONIC,
    interval: float = DEFAULT_CHECK_INTERVAL,
    trimmer: HeapTrimmer | None = None,
) -> None:
    """Runs ``trimmer.check()`` every ``interval`` seconds of ``clock`` until cancelled.

    Args:
        clock: The clock whose ``sleep`` paces the checks.
        interval: Seconds between two checks; must be > 0.
        trimmer: The trimmer; default: one on glibc's ``malloc_trim``. Without a trim
            function (not glibc) this returns at once.

    Raises:
        ValueError: ``interval`` is not positive.
    """
    if interval <= 0:
        raise ValueError(f"the heap trim interval must be > 0, got {interval}")
    trimmer = trimmer or HeapTrimmer()
    if not trimmer.available:
        log.debug("no malloc_trim in this C library; the heap is not trimmed")
        return
    while True:
        await clock.sleep(interval)
        trimmer.check()
