"""Tunes CPython's cyclic garbage collector for a long-running operator process.

With the default thresholds (700, 10, 10) a full (generation 2) collection runs after every
100 young collections, that is after every ~70,000 net allocations, whatever the heap's size:
the interpreter's other rule (skip a full collection until the objects promoted since the last
one exceed a quarter of the old generation) does not hold it back, because most of an
operator's short-lived objects (a request in flight, a decoded watch event waiting for the
store) outlive two young collections and count as promoted before they die by reference
count. Each full collection walks every tracked object, so its cost per RayCluster grows with
the number of RayClusters cached. Measured with ``benchmarks/scale_curve.py --cpu-samples``
(``gc.callbacks``, CPU time): creating 10,000 x 3 took 83 full collections at ~196 ms each,
1.63 ms of CPU per cluster, against 9 at ~46 ms, 0.41 ms per cluster, at 1,000; that was 1.27
of the 1.44 ms per cluster the creation cost grew by.

:func:`tune_collector` collects once, freezes what start-up left (imported modules, schemas,
settings: ~100,000 objects no collection will free) out of every later collection, and makes
the young generation 10,000 objects, so an object must outlive ~10,000 net allocations, not
700, to be promoted. A full collection then comes every ~1,000,000 net allocations at most.
It changes when unreachable cycles are freed, nothing the operator reads or writes.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

YOUNG_THRESHOLD = 10_000
"""Net allocations (tracked objects) between two young-generation collections."""

MIDDLE_THRESHOLD = 10
"""Young collections between two middle-generation collections (the default)."""

OLD_THRESHOLD = 10
"""Middle collections between two full collections (the default)."""


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Turns the collector off for the block (as it was after it): the start-up imports only
    build what the operator keeps (classes, schemas, compiled patterns), so the collections
    they would trigger free nothing, and :func:`tune_collector` walks it all once afterwards.
    Measured: ``import rayop.cli, rayop.controllers.assembly.run`` takes 0.58-0.65 s of CPU with
    the collector off against 0.65-0.74 s with it on (3 runs each, one invocation, 2 cores)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def tune_collector() -> None:
    """Collects, freezes the start-up heap and raises the young generation's threshold; for a
    process about to run the operator (call it once, after the imports)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)
