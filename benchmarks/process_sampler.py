"""Samples the CPU seconds of named processes while a child process runs.

``benchmarks/side_by_side.py`` samples the operator and every control-plane component once a
second while the bench runs, so a run's timeline shows who was busy when: the operator (CPU
bound?), the kube-apiserver and etcd (the API binds?), kwok (pods moving through their
stages) or nobody (everyone waits on a timer or a token bucket).
"""

from __future__ import annotations

import subprocess
import time

import psutil


class CpuSampler:
    """Records ``(seconds since start, {name: CPU seconds used so far})`` at each sample.

    A process that has exited keeps its last reading. The name ``machine`` is every core's
    busy time together (``psutil.cpu_times()``: all but idle and iowait), so a run can tell how
    much of the machine other work took meanwhile.

    Args:
        pids: Process id by name.
    """

    def __init__(self, pids: dict[str, int]) -> None:
        self._procs = {name: psutil.Process(pid) for name, pid in pids.items()}
        self._started = time.monotonic()
        self.started_wall = time.time()
        """When sampling started (Unix seconds), to line the samples up with an audit log."""
        self._last: dict[str, float] = {}
        self.samples: list[tuple[float, dict[str, float]]] = []
        self.sample()

    def sample(self) -> None:
        """Reads every process's CPU seconds (user + system) now."""
        for name, proc in self._procs.items():
            try:
                times = proc.cpu_times()
            except psutil.Error:
                continue
            self._last[name] = times.user + times.system
        machine = psutil.cpu_times()
        self._last["machine"] = sum(machine) - machine.idle - getattr(machine, "iowait", 0.0)
        self.samples.append((time.monotonic() - self._started, dict(self._last)))

    def sample_until_exit(self, child: subprocess.Popen[bytes], interval: float = 1.0) -> int:
        """Samples every ``interval`` seconds until ``child`` exits; returns its exit code."""
        while True:
            try:
                code = child.wait(interval)
            except subprocess.TimeoutExpired:
                self.sample()
                continue
            self.sample()
            return code

    def busy(self) -> dict[str, list[float]]:
        """Returns each process's share of one core between samples (1.0 = a full core)."""
        out: dict[str, list[float]] = {name: [] for name in [*self._procs, "machine"]}
        for (t0, cpu0), (t1, cpu1) in zip(self.samples, self.samples[1:], strict=False):
            dt = t1 - t0
            for name, shares in out.items():
                used = cpu1.get(name, 0.0) - cpu0.get(name, 0.0)
                shares.append(round(used / dt, 3) if dt > 0 else 0.0)
        return out


BUSY = 0.9
"""A process whose share of a core over a second is at least this was busy that second."""


def busy_summary(per_second: dict[str, list[float]], cores: int) -> dict[str, dict[str, float]]:
    """Summarises :meth:`CpuSampler.busy` per process (and ``machine``): the mean share of a
    core over the sampled seconds, and the share of those seconds in which it was busy (at
    least :data:`BUSY` of each core it can use: one for a process, ``cores`` for the machine),
    so a run can say what bound its time."""
    out: dict[str, dict[str, float]] = {}
    for name, shares in per_second.items():
        if not shares:
            continue
        full = BUSY * (cores if name == "machine" else 1)
        out[name] = {
            "mean_cores": round(sum(shares) / len(shares), 3),
            "busy_share": round(sum(1 for s in shares if s >= full) / len(shares), 3),
        }
    return out
