"""Benchmark: the floor, an operator that manages nothing, rayop beside KubeRay (not a test).

One invocation measures, on one ``rayop apiserver`` plane (HTTPS, ray.io CRDs installed, no
RayCluster anywhere):

- start-up: from the operator's process start to its RayCluster controller's ``Starting
  workers`` log line (controller-runtime's line once the caches synced; rayop logs it too),
  for ``rayop run`` and KubeRay's ``ray-operator`` (v1.7.0), alternating which goes first;
- RSS: the peak (VmHWM) and current (VmRSS) resident set after ``--idle`` seconds of idling,
  and the CPU seconds used by then;
- ``rayop up``: from the command to its ready banner, on a warm install (one untimed start
  first), with metrics and probes on free ports, and the CPU seconds it used by then (on a
  loaded machine the wall time waits for a core; the CPU time does not);
- the interpreter's floor: the peak RSS of a bare ``python -c pass`` and of a process that has
  only imported what ``rayop run`` imports before it connects.

A warm install has rayop's modules compiled to bytecode (pip writes them on install), so the
benchmark compiles the package it runs first: a checkout run with PYTHONDONTWRITEBYTECODE set
would otherwise compile every module at each start. Both operators run as deployed (a metrics server and a probe server, each on a free loopback
port) without leader election. Each figure is the median of ``--repeats`` with its min-max
spread. Run::

    .venv/bin/python benchmarks/floor.py [--repeats 3] [--idle 10]
        [--kuberay ~/.cache/rayop/kuberay/v1.7.0/ray-operator]
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import rayop
from rayop.bench.launched_operator import controller_started
from rayop.kube.client import KubeClient
from rayop.kube.config import load_kubeconfig
from rayop.testing.control_plane import install_crds

_KUBERAY = Path.home() / ".cache" / "rayop" / "kuberay" / "v1.7.0" / "ray-operator"
_TICK = os.sysconf("SC_CLK_TCK")


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_for(check: Callable[[], bool], proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 120
    while not check():
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode} before it was ready")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} was not ready within 120 s")
        time.sleep(0.005)


def _operator(argv: list[str], kubeconfig: Path, workdir: Path, idle: float) -> dict[str, float]:
    """Starts one operator; returns its start-up seconds, RSS (MiB) and CPU seconds."""
    log_path = workdir / f"operator-{time.monotonic_ns()}.log"
    with log_path.open("wb") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(
            argv,
            env={**os.environ, "KUBECONFIG": str(kubeconfig)},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        _wait_for(lambda: controller_started(log_path), proc, argv[0])
        started = time.perf_counter() - start
        startup_cpu = _cpu_seconds(proc.pid)
        time.sleep(idle)
        return {
            "start-up s": started,
            "start-up CPU s": startup_cpu,
            "peak RSS MiB": _status_kib(proc.pid, "VmHWM") / 1024,
            "idle RSS MiB": _status_kib(proc.pid, "VmRSS") / 1024,
            "CPU s": _cpu_seconds(proc.pid),
        }
    finally:
        _stop(proc)


def _rayop_up(workdir: Path) -> tuple[float, float]:
    """Seconds from ``rayop up`` to its ready banner, and the CPU seconds it used by then."""
    kubeconfig = workdir / f"up-{time.monotonic_ns()}.yaml"
    argv = [sys.executable, "-m", "rayop", "up", "--kubeconfig-out", str(kubeconfig)]
    argv += ["--metrics-addr", f"127.0.0.1:{_free_port()}"]
    argv += ["--health-probe-bind-address", f"127.0.0.1:{_free_port()}"]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(b"rayop is up"):
                return time.perf_counter() - start, _cpu_seconds(proc.pid)
        raise RuntimeError(f"rayop up exited with code {proc.wait()} without its banner")
    finally:
        _stop(proc, signal.SIGINT)
        if proc.stdout is not None:
            proc.stdout.close()


def _peak_rss_mib(code: str) -> float:
    """The peak RSS of a python process that runs ``code`` and then reports its VmHWM."""
    report = "import pathlib;print([l for l in pathlib.Path('/proc/self/status').read_text()"
    report += ".splitlines() if l.startswith('VmHWM')][0].split()[1])"
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\n{report}"], capture_output=True, text=True, check=True
    )
    return int(out.stdout.split()[-1]) / 1024


def _start_plane(workdir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    kubeconfig = workdir / "kubeconfig.yaml"
    cmd = [sys.executable, "-m", "rayop", "apiserver", "--kubeconfig-out", str(kubeconfig)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    proc.stdout.readline()
    return proc, kubeconfig


async def _install_crds(kubeconfig: Path) -> None:
    config = await load_kubeconfig(str(kubeconfig))
    async with KubeClient(config, qps=-1) as client:
        await install_crds(client)


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"


def main(kuberay: Path, repeats: int, idle: float) -> None:
    """Measures and prints the table."""
    def servers() -> list[str]:
        return [
            f"--metrics-addr=127.0.0.1:{_free_port()}",
            f"--health-probe-bind-address=127.0.0.1:{_free_port()}",
            "--enable-leader-election=false",
        ]

    commands = {
        "rayop": lambda: [sys.executable, "-m", "rayop", "run", *servers()],
        "kuberay": lambda: [str(kuberay), *servers()],
    }
    compileall.compile_dir(str(Path(rayop.__file__).parent), quiet=1)
    results: dict[str, list[dict[str, float]]] = {name: [] for name in commands}
    ups: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory(prefix="rayop-floor-") as tmp:
        workdir = Path(tmp)
        plane, kubeconfig = _start_plane(workdir)
        try:
            asyncio.run(_install_crds(kubeconfig))
            for rnd in range(repeats):
                order = ("rayop", "kuberay") if rnd % 2 == 0 else ("kuberay", "rayop")
                for name in order:
                    results[name].append(_operator(commands[name](), kubeconfig, workdir, idle))
        finally:
            _stop(plane)
            if plane.stdout is not None:
                plane.stdout.close()
        _rayop_up(workdir)  # warms the install: compiled modules, page cache
        ups = [_rayop_up(workdir) for _ in range(repeats)]
    load = os.getloadavg()
    print(f"repeats={repeats} idle={idle:g}s load={load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'':16s} {'rayop run':>22s} {'KubeRay v1.7.0':>22s} {'ratio':>7s}")
    for metric in results["rayop"][0]:
        ours = [r[metric] for r in results["rayop"]]
        theirs = [r[metric] for r in results["kuberay"]]
        ratio = statistics.median(ours) / max(statistics.median(theirs), 1e-9)
        print(f"{metric:16s} {_spread(ours):>22s} {_spread(theirs):>22s} {ratio:7.2f}x")
    print(f"rayop up to banner s: {_spread([u[0] for u in ups])}")
    print(f"rayop up CPU s to banner: {_spread([u[1] for u in ups])}")
    print(f"bare python peak RSS MiB: {_peak_rss_mib('pass'):.1f}")
    imports = "import rayop.cli.run, rayop.controllers.assembly.run"
    print(f"python + rayop run's imports peak RSS MiB: {_peak_rss_mib(imports):.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kuberay", type=Path, default=_KUBERAY, help="KubeRay's ray-operator")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--idle", type=float, default=10.0, help="seconds idle before RSS")
    args = parser.parse_args()
    main(args.kuberay, args.repeats, args.idle)
