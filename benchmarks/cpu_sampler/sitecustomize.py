"""A CPU-time sampling profiler for the operator under a benchmark (not part of rayop).

Put this directory first on ``PYTHONPATH`` and name an output file in ``RAYOP_CPU_SAMPLES``:
every Python process that starts then (the operator, ``rayop run``) takes a ``SIGPROF`` every
few milliseconds of its own CPU time (``ITIMER_PROF``: user + system, so time spent waiting for
a CPU on a busy machine is not counted, unlike cProfile's wall clock) and counts the Python
stack it interrupted; at exit it writes ``<count> <frame;frame;...>`` lines, most first.
``benchmarks/cpu_samples_report.py`` sums them by function. A C call (orjson, zlib, ssl) is
counted in the Python frame that made it. ``benchmarks/side_by_side.py --cpu-samples FILE``
and ``benchmarks/scale_curve.py --cpu-samples FILE`` set both variables for rayop's processes
only.

``SIGUSR2`` ends a phase: it writes what was counted so far to ``<file>.<pid>.<n>`` (n = 0, 1,
...) and starts counting anew; the exit writes the last phase to ``<file>.<pid>``. The header
line also holds the cyclic garbage collector's work in the phase (``gc.callbacks``): per
generation, the collections and the CPU seconds (``time.process_time``) they took, and the
objects the collector tracked at the phase's end.
"""

from __future__ import annotations

import os

_OUT = os.environ.get("RAYOP_CPU_SAMPLES")
_INTERVAL = 0.004  # the kernel's ITIMER_PROF ticks at HZ (250 here): finer asks are rounded up

if _OUT:
    import atexit
    import collections
    import gc
    import signal
    import time
    from types import FrameType
    from typing import Any

    _stacks: collections.Counter[str] = collections.Counter()
    _gc_count = [0, 0, 0]
    _gc_cpu = [0.0, 0.0, 0.0]
    _gc_started = [0.0]
    _phase = [0, time.process_time()]

    def _key(frame: FrameType | None) -> str:
        out: list[str] = []
        while frame is not None:
            code = frame.f_code
            path = code.co_filename.split("/site-packages/")[-1].split("/src/rayop/")[-1]
            out.append(f"{path}:{code.co_name}")
            frame = frame.f_back
        return ";".join(reversed(out))

    def _sample(signum: int, frame: FrameType | None) -> None:
        _stacks[_key(frame)] += 1

    def _on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            _gc_started[0] = time.process_time()
            return
        generation = info["generation"]
        _gc_count[generation] += 1
        _gc_cpu[generation] += time.process_time() - _gc_started[0]

    def _write(path: str) -> None:
        now = time.process_time()
        gc_text = " ".join(f"gen{g} {_gc_count[g]} {_gc_cpu[g]:.3f}" for g in range(3))
        with open(path, "w", encoding="utf-8") as out:
            out.write(
                f"# samples {sum(_stacks.values())} cpu {now - float(_phase[1]):.3f} "
                f"{gc_text} tracked {len(gc.get_objects())}\n"
            )
            for stack, count in _stacks.most_common():
                out.write(f"{count} {stack}\n")
        _stacks.clear()
        for g in range(3):
            _gc_count[g], _gc_cpu[g] = 0, 0.0
        _phase[1] = time.process_time()

    def _end_phase(signum: int, frame: FrameType | None) -> None:
        _write(f"{_OUT}.{os.getpid()}.{_phase[0]}")
        _phase[0] += 1

    def _at_exit() -> None:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        _write(f"{_OUT}.{os.getpid()}")

    gc.callbacks.append(_on_gc)
    signal.signal(signal.SIGPROF, _sample)
    signal.signal(signal.SIGUSR2, _end_phase)
    signal.setitimer(signal.ITIMER_PROF, _INTERVAL, _INTERVAL)
    atexit.register(_at_exit)
