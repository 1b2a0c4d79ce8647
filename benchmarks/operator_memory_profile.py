"""Profiles where a converged operator's memory goes, by file and line (not a test).

Starts ``rayop apiserver`` (plain HTTP, pods Ready 1 s after creation) in a child process, builds
the whole operator (``controllers/assembly/build.py`` ``build_operator``: every controller, KubeRay's
cache filter, qps 100 / burst 200) in this process, starts ``tracemalloc`` once the imports are
done, creates ``--clusters`` RayClusters of ``--workers`` workers, waits until every one is ready
(as the operator's own cache shows it), lets it settle for ``--settle`` seconds, collects garbage
and prints:

- the process RSS after the imports and after convergence (MiB);
- the live traced memory and the top allocation sites (by line and by file) of what was
  allocated after the imports: the informer caches, queues, expectations, event series, ...

tracemalloc slows the operator down several times, so times here mean nothing; memory does.
Run::

    .venv/bin/python benchmarks/operator_memory_profile.py [--clusters 100] [--workers 10]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import gc
import resource
import subprocess
import sys
import tempfile
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import psutil

from rayop.bench.runner import install_crds
from rayop.bench.scenarios import raycluster
from rayop.cli.realcluster import RealCluster, RealClusterSettings
from rayop.controllers.assembly.build import build_operator
from rayop.controllers.assembly.operator_settings import OperatorSettings
from rayop.controllers.assembly.run import new_client
from rayop.kube.client import KubeClient
from rayop.kube.config import load_config
from rayop.kube.resources import RAY_CLUSTERS
from rayop.runtime.manager import Manager
from rayop.runtime.metrics import OperatorMetrics


def _rss() -> float:
    return float(psutil.Process().memory_info().rss) / 2**20


def _ready(manager: Manager[KubeClient], clusters: int, workers: int) -> bool:
    cached = manager.informers.informer(RAY_CLUSTERS).list("default")
    return (
        sum(
            1
            for rc in cached
            if (rc.get("status") or {}).get("state") == "ready"
            and (rc.get("status") or {}).get("readyWorkerReplicas") == workers
        )
        == clusters
    )


def _print_top(snapshot: tracemalloc.Snapshot, key: str, limit: int) -> None:
    stats = snapshot.statistics(key)
    print(f"\ntop {limit} by {key}:")
    for stat in stats[:limit]:
        frame = stat.traceback[0]
        name = frame.filename.split("/site-packages/")[-1].split("/src/")[-1]
        where = f"{name}:{frame.lineno}" if key == "lineno" else name
        print(f"  {stat.size / 1024:9.1f} KiB {stat.count:8d} blocks  {where}")


@contextlib.contextmanager
def _plane(workdir: Path, real: bool) -> Iterator[Path]:
    """Starts the control plane: a real one (kube-apiserver + kwok) or ``rayop apiserver``."""
    if real:
        cluster = RealCluster(RealClusterSettings(workdir=workdir, nodes=3))
        info = cluster.start()
        try:
            yield info.kubeconfig
        finally:
            cluster.stop()
        return
    kubeconfig = workdir / "kubeconfig.yaml"
    cmd = [
        sys.executable, "-m", "rayop", "apiserver", "--no-tls",
        "--kubeconfig-out", str(kubeconfig), "--pod-pending-delay", "0",
        "--pod-running-delay", "1", "--pod-ready-delay", "0",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        yield kubeconfig
    finally:
        proc.terminate()
        proc.wait(10)


def _trimmed_rss() -> float:
    """Returns the RSS after glibc's malloc_trim (what freed-but-kept heap costs)."""
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return _rss()


def _peak_rss() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def profile(
    clusters: int, workers: int, settle: float, limit: int, *, trace: bool, real: bool
) -> None:
    """Runs the scenario and prints the memory figures."""
    with (
        tempfile.TemporaryDirectory(prefix="rayop-memprof-") as tmp,
        _plane(Path(tmp), real) as path,
    ):
        config = await load_config(kubeconfig=str(path))
        settings = OperatorSettings(
            metrics_addr="0", health_probe_bind_address="0", enable_leader_election=False
        )
        metrics = OperatorMetrics()
        async with KubeClient(config, qps=-1) as user:
            await install_crds(user)
            gc.collect()
            rss0 = _rss()
            if trace:
                tracemalloc.start(1)
            async with new_client(config, settings, metrics) as client:
                manager = build_operator(client, settings, metrics).manager
                task = asyncio.create_task(manager.run())
                await manager.wait_ready()
                await asyncio.gather(
                    *(
                        user.create(
                            RAY_CLUSTERS,
                            raycluster(f"rc-{i:04d}", workers, namespace="default"),
                        )
                        for i in range(clusters)
                    )
                )
                while not _ready(manager, clusters, workers):
                    await asyncio.sleep(0.2)
                await asyncio.sleep(settle)
                gc.collect()
                rss1 = _rss()
                trimmed = _trimmed_rss()
                snapshot = tracemalloc.take_snapshot() if trace else None
                current, peak = tracemalloc.get_traced_memory()
                peak_rss = _peak_rss()
                manager.request_stop()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(task, 20)
    print(
        f"{clusters} x {workers}: RSS after imports {rss0:.1f} MiB, converged {rss1:.1f} MiB, "
        f"after malloc_trim {trimmed:.1f} MiB, peak {peak_rss:.1f} MiB"
    )
    if snapshot is None:
        return
    tracemalloc.stop()
    print(f"traced since imports: live {current / 2**20:.1f} MiB, peak {peak / 2**20:.1f} MiB")
    snapshot = snapshot.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
    _print_top(snapshot, "lineno", limit)
    _print_top(snapshot, "filename", limit)


def main() -> None:
    """Parses the flags and runs the profile."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--workers", type=int, default=10)
    parser.add_argument("--settle", type=float, default=5.0, help="seconds after all ready")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--real", action="store_true", help="a real kube-apiserver + kwok")
    parser.add_argument("--no-trace", action="store_true", help="RSS only, no tracemalloc")
    args = parser.parse_args()
    asyncio.run(
        profile(
            args.clusters,
            args.workers,
            args.settle,
            args.top,
            trace=not args.no_trace,
            real=args.real,
        )
    )


if __name__ == "__main__":
    main()
