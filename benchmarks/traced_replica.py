"""Runs ``rayop`` and prints where its memory lives on SIGUSR1 (not a test).

``sharded_scale.py --trace`` starts each replica through this module instead of ``python -m
rayop``, under tracemalloc: tracing starts once rayop's modules are imported, so the import
floor is not counted, and it slows the replica down several times (a traced run's times mean
nothing; its memory does). ``sharded_scale.py --probe`` starts it without tracemalloc
(``RAYOP_TRACE_ALLOCATOR_ONLY=1``): the replica runs at its own speed and its resident set is
its own, and the profile then has the allocators' figures only.

On SIGUSR1 the process collects garbage and writes, to the file named by ``RAYOP_TRACE_OUT``:

- its peak and current RSS, and how much of the resident set is anonymous memory;
- glibc's heap (``mallinfo2``: bytes in use and free in the arenas, bytes in mmapped blocks);
- pymalloc's arenas: bytes in allocated blocks, and bytes in free blocks of used pools (freed
  small objects whose pools still hold live ones: what a burst of short-lived objects leaves);
- with tracemalloc: the live traced memory and the top allocation sites by file and by line;
- each informer store's objects, compact bytes and dictionary generations (a store whose
  average is well above its peers' learned from a poor first object);
- the Events kept for their series (how many, their packed bytes) and the decision log (the
  objects and passes it keeps): both are bounded per process, not per object, so they do not
  shrink when a fleet is split among replicas;
- with ``RAYOP_TRACE_CENSUS=1``: every live object reachable from the garbage collector's
  containers, counted and sized (``sys.getsizeof``, shallow) by type, and the dicts, lists and
  tuples by the type of the object that holds them: where pymalloc's allocated bytes go.

With ``RAYOP_TRACE_SAMPLE=SECONDS`` a thread also appends, every SECONDS, the process's RSS and
pymalloc's allocated blocks to ``RAYOP_TRACE_OUT`` + ``.samples`` (seconds since start, RSS MiB,
blocks): a live set that peaked before the end shows as blocks falling while RSS stays. With
``RAYOP_TRACE_DUMP_AT=SECONDS`` as well, it has the process write its profile once at that
time too, to ``RAYOP_TRACE_OUT`` + ``.at`` + SECONDS (the census at the peak, against the end).

Run (as the benchmark does)::

    RAYOP_TRACE_OUT=/tmp/r1.trace python benchmarks/traced_replica.py run --kubeconfig=...
"""

from __future__ import annotations

import ctypes
import gc
import os
import re
import signal
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from types import FrameType

import psutil

from rayop.cli import main as rayop_main
from rayop.controllers.assembly.build import build_operator  # noqa: F401  (imported before tracing)
from rayop.runtime.decisions import DecisionLog
from rayop.runtime.events.series import SeriesCache
from rayop.runtime.informers.indexer import Indexer

_PYMALLOC_LINES = re.compile(r"# (arenas allocated total|bytes in allocated blocks|bytes in available blocks)")


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                     "uordblks", "fordblks", "keepcost")
    ]  # fmt: skip


def _allocators() -> list[str]:
    """The process's memory as the kernel, glibc and pymalloc see it."""
    status = Path("/proc/self/status").read_text().splitlines()
    lines = [" ".join(line.split()) for line in status if line.startswith(("VmHWM", "VmRSS", "RssAnon"))]
    mallinfo2 = getattr(ctypes.CDLL(None), "mallinfo2", None)
    if mallinfo2 is not None:
        mallinfo2.restype = _MallInfo2
        info = mallinfo2()
        lines.append(
            f"glibc heap: in use {info.uordblks / 2**20:.1f} MiB, free {info.fordblks / 2**20:.1f}"
            f" MiB, mmapped blocks {info.hblkhd / 2**20:.1f} MiB"
        )
    saved = os.dup(2)
    with tempfile.TemporaryFile() as out:
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        stats = out.read().decode(errors="replace").splitlines()
    lines += [f"pymalloc {' '.join(line.split())}" for line in stats if _PYMALLOC_LINES.search(line)]
    return lines


def _bounded_per_process() -> list[str]:
    """The Events kept for their series and the decision log's passes."""
    lines = []
    for cache in [o for o in gc.get_objects() if isinstance(o, SeriesCache) and len(o)]:
        packed = cache.packed_bytes()
        lines.append(f"event series: {len(cache)} Events kept, {packed / 2**20:.2f} MiB packed")
    for decisions in [o for o in gc.get_objects() if isinstance(o, DecisionLog)]:
        passes = decisions.records()
        lines.append(f"decision log: {len(decisions)} objects, {passes} passes")
    return lines


def _census() -> list[str]:
    """Every object the collector's containers reach, counted and sized by type; the plain
    containers also by their holder's type (the first container found that refers to them)."""
    tracked = gc.get_objects()
    seen: dict[int, object] = {id(o): o for o in tracked}
    for obj in tracked:
        for child in gc.get_referents(obj):
            if id(child) not in seen:
                seen[id(child)] = child
    by_type: dict[str, list[int]] = {}
    for obj in seen.values():
        slot = by_type.setdefault(type(obj).__qualname__, [0, 0])
        slot[0] += 1
        slot[1] += sys.getsizeof(obj)
    plain = (dict, list, tuple, str, bytes, float, int, set)
    holder: dict[int, str] = {}
    for obj in tracked:
        if type(obj) in plain:
            continue
        for child in gc.get_referents(obj):
            if type(child) in plain:
                holder.setdefault(id(child), type(obj).__qualname__)
    by_holder: dict[str, list[int]] = {}
    for key, name in holder.items():
        obj = seen[key]
        slot = by_holder.setdefault(f"{type(obj).__qualname__} in {name}", [0, 0])
        slot[0] += 1
        slot[1] += sys.getsizeof(obj)
    lines = [f"-- census: {len(seen)} objects, {sum(v[1] for v in by_type.values()) / 2**20:.1f} MiB shallow"]
    for name, (count, size) in sorted(by_type.items(), key=lambda kv: -kv[1][1])[:40]:
        lines.append(f"{size / 2**20:8.2f} MiB {count:9d}  {name}")
    lines.append("-- census of plain objects by holder")
    for name, (count, size) in sorted(by_holder.items(), key=lambda kv: -kv[1][1])[:40]:
        lines.append(f"{size / 2**20:8.2f} MiB {count:9d}  {name}")
    return lines


def _dump(_sig: int, _frame: FrameType | None) -> None:
    gc.collect()
    rss = psutil.Process().memory_info().rss / 2**20
    lines = [f"RSS {rss:.1f} MiB", *_allocators(), *_bounded_per_process()]
    if os.environ.get("RAYOP_TRACE_CENSUS") == "1":
        lines += _census()
    if tracemalloc.is_tracing():
        lines += _traced()
    lines += _stores()
    out = Path(os.environ["RAYOP_TRACE_OUT"])
    tmp = out.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.rename(out)


def _traced() -> list[str]:
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(False, tracemalloc.__file__)]
    )
    current, peak = tracemalloc.get_traced_memory()
    lines = [f"traced live {current / 2**20:.1f} MiB, peak {peak / 2**20:.1f} MiB"]
    for key in ("filename", "lineno"):
        lines.append(f"-- top by {key}")
        for stat in snapshot.statistics(key)[:40]:
            frame = stat.traceback[0]
            where = frame.filename if key == "filename" else f"{frame.filename}:{frame.lineno}"
            where = where.split("site-packages/")[-1].split("/src/")[-1]
            lines.append(f"{stat.size / 2**20:8.2f} MiB {stat.count:9d}  {where}")
    return lines


def _stores() -> list[str]:
    lines = ["-- informer stores: objects, compact bytes (average), dictionaries learned"]
    for store in [o for o in gc.get_objects() if isinstance(o, Indexer) and len(o)]:
        kind = next(iter(store.values())).get("kind", "?")
        size = store.stored_bytes()
        lines.append(
            f"{kind:>20} {len(store):9d} {size / 2**20:8.2f} MiB ({size / len(store):.0f} B)"
            f" {store.dictionary_generations:3d}"
        )
    return lines


def _sample(every: float, out: Path, dump_at: float) -> None:
    start = time.monotonic()
    process = psutil.Process()
    profile = Path(os.environ["RAYOP_TRACE_OUT"])
    with out.open("a") as file:
        while True:
            rss = process.memory_info().rss / 2**20
            file.write(f"{time.monotonic() - start:.0f} {rss:.1f} {sys.getallocatedblocks()}\n")
            file.flush()
            time.sleep(every)
            if dump_at > 0 and time.monotonic() - start >= dump_at:
                dump_at = 0
                profile.unlink(missing_ok=True)
                os.kill(os.getpid(), signal.SIGUSR1)
                while not profile.exists():
                    time.sleep(0.5)
                profile.rename(f"{profile}.at{time.monotonic() - start:.0f}")


def main() -> None:
    signal.signal(signal.SIGUSR1, _dump)
    every = float(os.environ.get("RAYOP_TRACE_SAMPLE") or 0)
    if every > 0:
        out = Path(os.environ["RAYOP_TRACE_OUT"] + ".samples")
        dump_at = float(os.environ.get("RAYOP_TRACE_DUMP_AT") or 0)
        threading.Thread(target=_sample, args=(every, out, dump_at), daemon=True).start()
    if os.environ.get("RAYOP_TRACE_ALLOCATOR_ONLY") != "1":
        tracemalloc.start(1)
    sys.argv = ["rayop", *sys.argv[1:]]
    rayop_main()


if __name__ == "__main__":
    main()
