"""Runs ``rayop`` under tracemalloc and prints where its memory lives on SIGUSR1 (not a test).

``sharded_scale.py --trace`` starts each replica through this module instead of ``python -m
rayop``. Tracing starts once rayop's modules are imported, so the import floor is not counted.
On SIGUSR1 the process collects garbage and writes, to the file named by ``RAYOP_TRACE_OUT``, its
RSS, the live traced memory, the top allocation sites by file and by line, and each informer
store's objects, compact bytes and dictionary generations (a store whose average is well above
its peers' learned from a poor first object). tracemalloc slows the replica down several
times: a traced run's times mean nothing; its memory does.

Run (as the benchmark does)::

    RAYOP_TRACE_OUT=/tmp/r1.trace python benchmarks/traced_replica.py run --kubeconfig=...
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import tracemalloc
from pathlib import Path
from types import FrameType

import psutil

from rayop.cli import main as rayop_main
from rayop.controllers.assembly.build import build_operator  # noqa: F401  (imported before tracing)
from rayop.runtime.informers.indexer import Indexer


def _dump(_sig: int, _frame: FrameType | None) -> None:
    gc.collect()
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(False, tracemalloc.__file__)]
    )
    current, peak = tracemalloc.get_traced_memory()
    rss = psutil.Process().memory_info().rss / 2**20
    lines = [
        f"RSS {rss:.1f} MiB; traced live {current / 2**20:.1f} MiB, peak {peak / 2**20:.1f} MiB"
    ]
    for key in ("filename", "lineno"):
        lines.append(f"-- top by {key}")
        for stat in snapshot.statistics(key)[:40]:
            frame = stat.traceback[0]
            where = frame.filename if key == "filename" else f"{frame.filename}:{frame.lineno}"
            where = where.split("site-packages/")[-1].split("/src/")[-1]
            lines.append(f"{stat.size / 2**20:8.2f} MiB {stat.count:9d}  {where}")
    lines.append("-- informer stores: objects, compact bytes (average), dictionaries learned")
    for store in [o for o in gc.get_objects() if isinstance(o, Indexer) and len(o)]:
        kind = next(iter(store.values())).get("kind", "?")
        size = store.stored_bytes()
        lines.append(
            f"{kind:>20} {len(store):9d} {size / 2**20:8.2f} MiB ({size / len(store):.0f} B)"
            f" {store.dictionary_generations:3d}"
        )
    out = Path(os.environ["RAYOP_TRACE_OUT"])
    tmp = out.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.rename(out)


def main() -> None:
    signal.signal(signal.SIGUSR1, _dump)
    tracemalloc.start(1)
    sys.argv = ["rayop", *sys.argv[1:]]
    rayop_main()


if __name__ == "__main__":
    main()
