"""A CPU-time sampling profiler for the operator under a benchmark (not part of rayop).

Put this directory first on ``PYTHONPATH`` and name an output file in ``RAYOP_CPU_SAMPLES``:
every Python process that starts then (the operator, ``rayop run``) takes a ``SIGPROF`` every
few milliseconds of its own CPU time (``ITIMER_PROF``: user + system, so time spent waiting for
a CPU on a busy machine is not counted, unlike cProfile's wall clock) and counts the Python
stack it interrupted; at exit it writes ``<count> <frame;frame;...>`` lines, most first.
``benchmarks/cpu_samples_report.py`` sums them by function. A C call (orjson, zlib, ssl) is
counted in the Python frame that made it. ``benchmarks/side_by_side.py --cpu-samples FILE``
sets both variables for rayop's process only.
"""

from __future__ import annotations

import os

_OUT = os.environ.get("RAYOP_CPU_SAMPLES")
_INTERVAL = 0.004  # the kernel's ITIMER_PROF ticks at HZ (250 here): finer asks are rounded up

if _OUT:
    import atexit
    import collections
    import signal
    from types import FrameType

    _stacks: collections.Counter[str] = collections.Counter()

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

    def _write() -> None:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        times = os.times()
        with open(f"{_OUT}.{os.getpid()}", "w", encoding="utf-8") as out:
            out.write(f"# samples {sum(_stacks.values())} cpu {times.user + times.system:.3f}\n")
            for stack, count in _stacks.most_common():
                out.write(f"{count} {stack}\n")

    signal.signal(signal.SIGPROF, _sample)
    signal.setitimer(signal.ITIMER_PROF, _INTERVAL, _INTERVAL)
    atexit.register(_write)
