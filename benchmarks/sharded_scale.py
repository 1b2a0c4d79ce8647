"""Benchmark: N RayClusters x W workers, one replica against three sharded ones (issue 30; not a test).

Every scenario starts a fresh ``rayop apiserver`` (the embedded plane, plain HTTP) in a child
process and runs each replica as its own ``rayop run`` process (every replica at the same
``--qps``/``--burst``), creates every RayCluster at once and waits until all are ready (state
``ready`` with every worker ready, read by the benchmark from the API server). Scenarios, in one
invocation so that their ratios share the machine's load:

- ``one``: one replica without ``--sharding`` (today's operator);
- ``three``: three replicas with ``--sharding``;
- ``kill``: three sharded replicas, one SIGKILLed once half the clusters are assigned (while
  the other half is created): seconds from the kill until every RayCluster is owned by a
  survivor (the target: the Lease duration, 15 s, plus 5 s);
- ``scale``: one sharded replica, two more started once half the clusters are ready, then one
  of the three stopped (SIGTERM) once the joiners got their shares: 1 -> 3 -> 2 under load;
  drain times (request seen to acknowledgement) from ``rayop_shard_drain_seconds``.

Reported per scenario: time to all ready, each replica's peak RSS (``VmHWM`` of its process),
pod creates from the API server's ``apiserver_request_total`` (must be N x (W + 1): 0 duplicate
creates), overlapping passes of one key by two replicas in the merged ``--pass-record`` files
(must be 0), and for ``three`` the ratios to ``one`` (targets: time <= 0.5x, RSS <= 0.45x),
with the largest replica's growth above its start against the one replica's (what sharding
divides: a third would be the whole share divided, and the start does not divide).
A scenario named more than once runs again (``--scenarios three,three,three,one``): each run's
ratios to ``one``, then their median and spread (its logs kept as ``three-2``, ``three-3``...).

Run::

    .venv/bin/python benchmarks/sharded_scale.py --clusters 1000 [--workers 2] [--qps 100] \
        [--burst 200] [--scenarios one,three,kill,scale] [--json out.json] \\
        [--log-level info] [--keep-logs DIR] [--trace | --probe]

``--trace`` runs each replica under tracemalloc (``traced_replica.py``) and has it write its heap
profile once all are ready: where a replica's memory lives, at the price of meaningless times.
``--probe`` writes the same profile without tracemalloc (the allocators' figures, the informer
stores, the Events and decisions kept): the replicas run at their own speed and their RSS is
what it would be untraced.

The issue's size: ``--clusters 30000`` (hours on a 2-core machine; needs several GB of memory).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rayop.bench.child_lifetime import end_with_parent
from rayop.bench.runner import install_crds
from rayop.cli.realcluster import free_port
from rayop.kube.client import KubeClient
from rayop.kube.config import load_config
from rayop.kube.resources import LEASES, RAY_CLUSTERS
from rayop.runtime.sharding.pass_record import overlaps, read_passes

SHARD = "rayop.io/shard"
DRAIN = "rayop.io/drain"
NAMESPACE = "default"
LEASE_DURATION = 15.0
_CREATES = re.compile(
    r'apiserver_request_total\{code="201",resource="pods",subresource="",verb="POST"\} (\d+)'
)
_DRAIN_BUCKET = re.compile(r'rayop_shard_drain_seconds_bucket\{le="([^"]+)"\} ([0-9.e+]+)')


def raycluster(name: str, workers: int) -> dict[str, Any]:
    """A RayCluster with one worker group of ``workers`` replicas."""
    template = {"spec": {"containers": [{"name": "ray", "image": "rayproject/ray:2.46.0"}]}}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "rayVersion": "2.46.0",
            "headGroupSpec": {"rayStartParams": {}, "template": template},
            "workerGroupSpecs": [
                {"groupName": "w", "replicas": workers, "minReplicas": 0, "maxReplicas": workers,
                 "rayStartParams": {}, "template": template}
            ],
        },
    }  # fmt: skip


@dataclass
class Replica:
    """One ``rayop run`` process."""

    name: str
    proc: subprocess.Popen[bytes]
    metrics_port: int
    probe_port: int
    log: Path

    def peak_rss_mb(self) -> float | None:
        """The process's peak resident set (VmHWM), or None once it has exited."""
        return self._status_mb("VmHWM:")

    def rss_mb(self) -> float | None:
        """The process's resident set now (VmRSS), or None once it has exited."""
        return self._status_mb("VmRSS:")

    def _status_mb(self, field_name: str) -> float | None:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith(field_name):
                    return int(line.split()[1]) / 1024
        return None


@dataclass
class Scenario:
    """What one scenario measured."""

    name: str
    replicas: int
    all_ready_s: float = 0.0
    peak_rss_mb: dict[str, float] = field(default_factory=dict)
    floor_rss_mb: dict[str, float] = field(default_factory=dict)
    peak_at_s: dict[str, float] = field(default_factory=dict)
    pod_creates: int = 0
    expected_pod_creates: int = 0
    passes: int = 0
    overlapping_passes: int = 0
    owned_again_s: float | None = None
    drains: int = 0
    drain_p99_le_s: float | None = None
    notes: list[str] = field(default_factory=list)


class Bench:
    """One embedded plane and the replicas run against it."""

    def __init__(self, workdir: Path, args: argparse.Namespace) -> None:
        self.workdir = workdir
        self.args = args
        self.replicas: dict[str, Replica] = {}
        self.apiserver: subprocess.Popen[str] | None = None
        self.kubeconfig = workdir / "kubeconfig.yaml"
        self.client: KubeClient | None = None
        self._ports: set[int] = set()
        self._peaks: dict[str, tuple[float, float]] = {}  # replica -> (VmHWM, seconds since t0)
        self._sampler: asyncio.Task[None] | None = None

    def sample_from(self, t0: float) -> None:
        """Records, every second, when each replica's peak RSS last rose (seconds after ``t0``)."""

        async def loop() -> None:
            while True:
                for name, replica in self.replicas.items():
                    peak = replica.peak_rss_mb()
                    if peak is not None and peak > self._peaks.get(name, (0.0, 0.0))[0]:
                        self._peaks[name] = (peak, time.monotonic() - t0)
                await asyncio.sleep(1.0)

        self._sampler = asyncio.get_running_loop().create_task(loop())

    def floors(self, result: Scenario) -> None:
        """Records each replica's RSS now (after start-up, before any RayCluster exists)."""
        for name, replica in self.replicas.items():
            rss = replica.rss_mb()
            if rss is not None:
                result.floor_rss_mb[name] = round(rss, 1)

    async def __aenter__(self) -> Bench:
        self.apiserver = await asyncio.to_thread(
            start_apiserver, self.kubeconfig, self.args.pod_start
        )
        self.client = KubeClient(await load_config(kubeconfig=str(self.kubeconfig)), qps=-1)
        await install_crds(self.client)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._sampler is not None:
            self._sampler.cancel()
        for replica in self.replicas.values():
            stop(replica.proc, signal.SIGTERM)
        if self.client is not None:
            await self.client.close()
        if self.apiserver is not None:
            stop(self.apiserver, signal.SIGTERM)

    def _port(self) -> int:
        """A free port no replica of this bench was given (a port just freed may come back)."""
        used = {p for r in self.replicas.values() for p in (r.metrics_port, r.probe_port)}
        used |= self._ports
        while (port := free_port()) in used:
            pass
        self._ports.add(port)
        return port

    def start(self, name: str, *, sharding: bool) -> Replica:
        """Starts one replica; returns at once (see :meth:`ready`)."""
        metrics_port, probe_port = self._port(), self._port()
        log = self.workdir / f"{name}.log"
        entry = (
            [str(Path(__file__).with_name("traced_replica.py"))]
            if self.args.trace or self.args.probe
            else ["-m", "rayop"]
        )
        argv = [
            sys.executable, *entry, "run", f"--kubeconfig={self.kubeconfig}",
            f"--qps={self.args.qps}", f"--burst={self.args.burst}",
            f"--reconcile-concurrency={self.args.concurrency}",
            f"--metrics-addr=127.0.0.1:{metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{probe_port}",
            "--enable-leader-election=true", f"--leader-election-namespace={NAMESPACE}",
            f"--log-level={self.args.log_level}",
        ]  # fmt: skip
        if sharding:
            argv += ["--sharding=true", f"--replica-id={name}",
                     f"--pass-record={self.workdir / name}.jsonl"]  # fmt: skip
        env = {**os.environ, "RAYOP_TRACE_OUT": str(self.workdir / f"{name}.trace")}
        if self.args.probe:
            env["RAYOP_TRACE_ALLOCATOR_ONLY"] = "1"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, preexec_fn=end_with_parent(), env=env
            )
        self.replicas[name] = Replica(name, proc, metrics_port, probe_port, log)
        return self.replicas[name]

    async def ready(self, replica: Replica, timeout: float = 120) -> None:
        """Blocks until the replica's /readyz answers 200."""
        url = f"http://127.0.0.1:{replica.probe_port}/readyz"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if replica.proc.poll() is not None:
                raise RuntimeError(f"{replica.name} exited: {replica.log.read_text()[-2000:]}")
            if await asyncio.to_thread(http_ok, url):
                return
            await asyncio.sleep(0.3)
        raise TimeoutError(f"{replica.name} not ready in {timeout} s")

    async def create(self, first: int, last: int) -> None:
        """Creates RayClusters ``rc-<first>`` .. ``rc-<last - 1>``, 32 at a time."""
        assert self.client is not None
        limit = asyncio.Semaphore(32)

        async def one(i: int) -> None:
            async with limit:
                await self.client.create(  # type: ignore[union-attr]
                    RAY_CLUSTERS, raycluster(f"rc-{i}", self.args.workers), namespace=NAMESPACE
                )

        await asyncio.gather(*(one(i) for i in range(first, last)))

    async def clusters(self) -> list[dict[str, Any]]:
        assert self.client is not None
        return list((await self.client.list(RAY_CLUSTERS, namespace=NAMESPACE))["items"])

    async def count_ready(self) -> int:
        return sum(
            (rc.get("status") or {}).get("state") == "ready"
            and (rc.get("status") or {}).get("readyWorkerReplicas") == self.args.workers
            for rc in await self.clusters()
        )

    async def owners(self) -> list[str | None]:
        return [(rc["metadata"].get("labels") or {}).get(SHARD) for rc in await self.clusters()]

    async def wait(self, what: str, check: Callable[[], Awaitable[bool]], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not await check():
            for replica in self.replicas.values():
                code = replica.proc.poll()
                if code not in (None, -signal.SIGKILL, 0):
                    raise RuntimeError(
                        f"{replica.name} exited {code}: {replica.log.read_text()[-2000:]}"
                    )
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: not within {timeout} s")
            await asyncio.sleep(self.args.poll)

    async def pod_creates(self) -> int:
        assert self.client is not None
        _, body = await self.client.request("GET", "/metrics")
        return sum(int(v) for v in _CREATES.findall(body.decode()))

    async def sharder_replica(self) -> str:
        """The replica id whose process runs the sharder (its Lease holder is ``<id>_<uuid>``)."""
        assert self.client is not None
        with contextlib.suppress(Exception):
            lease = await self.client.get(
                LEASES, "ray-operator-leader-sharder", namespace=NAMESPACE
            )
            return str((lease.get("spec") or {}).get("holderIdentity") or "").rpartition("_")[0]
        return ""

    def drain_buckets(self, replica: Replica) -> list[tuple[float, float]]:
        """The replica's cumulative drain-time buckets (upper bound, count)."""
        text = http_text(f"http://127.0.0.1:{replica.metrics_port}/metrics")
        return [(float(le), float(count)) for le, count in _DRAIN_BUCKET.findall(text)]

    async def traces(self) -> None:
        """With ``--trace`` or ``--probe``: has every live replica write its heap profile, and copies each
        into the ``--keep-logs`` folder (or prints it)."""
        for name, replica in self.replicas.items():
            if replica.proc.poll() is not None:
                continue
            out = self.workdir / f"{name}.trace"
            replica.proc.send_signal(signal.SIGUSR1)
            while not out.exists():
                await asyncio.sleep(0.5)
            if self.args.keep_logs is None:
                print(f"== heap of {name}\n{out.read_text()}")

    async def finish(self, result: Scenario) -> Scenario:
        """Fills in RSS, pod creates and the pass-record check."""
        if self.args.trace or self.args.probe:
            await self.traces()
        for name, replica in self.replicas.items():
            rss = replica.peak_rss_mb()
            if rss is not None:
                result.peak_rss_mb[name] = round(rss, 1)
        result.peak_at_s = {name: round(at, 1) for name, (_, at) in self._peaks.items()}
        result.pod_creates = await self.pod_creates()
        result.expected_pod_creates = self.args.clusters * (1 + self.args.workers)
        files = [self.workdir / f"{n}.jsonl" for n in self.replicas]
        passes = list(read_passes([f for f in files if f.exists()]))
        result.passes = len(passes)
        result.overlapping_passes = len(overlaps(passes))
        return result


def start_apiserver(kubeconfig: Path, pod_start: float) -> subprocess.Popen[str]:
    """Starts ``rayop apiserver`` (writing ``kubeconfig``); returns once it serves."""
    cmd = [
        sys.executable, "-m", "rayop", "apiserver", "--no-tls", "--kubeconfig-out", str(kubeconfig),
        "--pod-pending-delay", "0", "--pod-running-delay", str(pod_start), "--pod-ready-delay", "0",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        preexec_fn=end_with_parent(),
    )  # fmt: skip
    assert proc.stdout is not None
    proc.stdout.readline()
    return proc


def http_ok(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def http_text(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=5) as resp:
        return str(resp.read().decode())


def stop(proc: subprocess.Popen[Any], sig: int) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def p99_bound(buckets: list[tuple[float, float]]) -> float | None:
    """The upper bound of the bucket that holds the 99th percentile (None: no observation)."""
    total = max((count for _, count in buckets), default=0.0)
    if not total:
        return None
    for le, count in sorted(buckets):
        if count >= 0.99 * total:
            return le
    return None


async def scenario_plain(args: argparse.Namespace, workdir: Path, replicas: int) -> Scenario:
    name = "one" if replicas == 1 else "three"
    async with Bench(workdir, args) as bench:
        started = [bench.start(f"r{i}", sharding=replicas > 1) for i in range(replicas)]
        for replica in started:
            await bench.ready(replica)
        floors = Scenario(name, replicas)
        bench.floors(floors)
        t0 = time.monotonic()
        bench.sample_from(t0)
        await bench.create(0, args.clusters)
        await bench.wait(
            "all ready", lambda: _all(bench.count_ready(), args.clusters), args.timeout
        )
        result = Scenario(name, replicas, all_ready_s=round(time.monotonic() - t0, 1))
        result.floor_rss_mb = floors.floor_rss_mb
        return await bench.finish(result)


async def _all(count: Awaitable[int], n: int) -> bool:
    return await count == n


async def scenario_kill(args: argparse.Namespace, workdir: Path) -> Scenario:
    async with Bench(workdir, args) as bench:
        for i in range(3):
            bench.start(f"r{i}", sharding=True)
        for replica in list(bench.replicas.values()):
            await bench.ready(replica)
        half = args.clusters // 2
        t0 = time.monotonic()
        await bench.create(0, half)

        async def half_owned() -> bool:
            owners = await bench.owners()
            return len(owners) == half and None not in owners

        await bench.wait("first half owned", half_owned, args.timeout)
        victim = await bench.sharder_replica()
        victim_rss = bench.replicas[victim].peak_rss_mb()
        bench.replicas[victim].proc.kill()
        killed = time.monotonic()
        await bench.create(half, args.clusters)

        async def owned_by_survivors() -> bool:
            owners = await bench.owners()
            return len(owners) == args.clusters and set(owners) <= set(bench.replicas) - {victim}

        await bench.wait("owned by survivors", owned_by_survivors, args.timeout)
        owned_again = time.monotonic() - killed
        await bench.wait(
            "all ready", lambda: _all(bench.count_ready(), args.clusters), args.timeout
        )
        result = Scenario("kill", 3, all_ready_s=round(time.monotonic() - t0, 1))
        result.owned_again_s = round(owned_again, 1)
        result.notes.append(f"SIGKILLed {victim} (it ran the sharder)")
        await bench.finish(result)
        if victim_rss is not None:
            result.peak_rss_mb[victim] = round(victim_rss, 1)  # at the kill
        return result


async def scenario_scale(args: argparse.Namespace, workdir: Path) -> Scenario:
    async with Bench(workdir, args) as bench:
        await bench.ready(bench.start("r0", sharding=True))
        t0 = time.monotonic()
        await bench.create(0, args.clusters)
        await bench.wait("half ready", lambda: _at_least(bench.count_ready(), args.clusters // 2),
                         args.timeout)  # fmt: skip
        for name in ("r1", "r2"):
            bench.start(name, sharding=True)
        for name in ("r1", "r2"):
            await bench.ready(bench.replicas[name])

        async def settled(members: set[str]) -> bool:
            clusters = await bench.clusters()
            owners = {(rc["metadata"].get("labels") or {}).get(SHARD) for rc in clusters}
            drains = [rc for rc in clusters if (rc["metadata"].get("labels") or {}).get(DRAIN)]
            return owners == members and not drains

        await bench.wait("three share the fleet", lambda: settled({"r0", "r1", "r2"}), args.timeout)
        buckets = {n: bench.drain_buckets(r) for n, r in bench.replicas.items()}
        leaving = await bench.sharder_replica()
        leaving = next(n for n in ("r0", "r1", "r2") if n != leaving)  # a replica, not the sharder
        stop(bench.replicas[leaving].proc, signal.SIGTERM)
        left = time.monotonic()
        survivors = {"r0", "r1", "r2"} - {leaving}
        await bench.wait("two share the fleet", lambda: settled(survivors), args.timeout)
        owned_again = time.monotonic() - left
        await bench.wait(
            "all ready", lambda: _all(bench.count_ready(), args.clusters), args.timeout
        )
        result = Scenario("scale", 3, all_ready_s=round(time.monotonic() - t0, 1))
        result.owned_again_s = round(owned_again, 1)
        for name in survivors:
            buckets[name] = bench.drain_buckets(bench.replicas[name])
        merged: dict[float, float] = {}
        for series in buckets.values():
            for le, count in series:
                merged[le] = merged.get(le, 0.0) + count
        result.drains = int(max(merged.values(), default=0))
        result.drain_p99_le_s = p99_bound(sorted(merged.items()))
        result.notes.append(f"1 -> 3 at half ready; then {leaving} stopped (SIGTERM): 3 -> 2")
        return await bench.finish(result)


async def _at_least(count: Awaitable[int], n: int) -> bool:
    return await count >= n


def print_scenario(r: Scenario) -> None:
    """Prints one scenario's figures (as soon as it ends, so an interrupted invocation keeps
    those it finished)."""
    rss = ", ".join(f"{n} {v:.0f}" for n, v in sorted(r.peak_rss_mb.items()))
    print(f"== {r.name}: {r.replicas} replica(s)")
    print(f"   all ready         {r.all_ready_s:.1f} s")
    print(f"   peak RSS (MB)     {rss}")
    if r.floor_rss_mb:
        floor = ", ".join(f"{n} {v:.0f}" for n, v in sorted(r.floor_rss_mb.items()))
        at = ", ".join(f"{n} {v:.0f}" for n, v in sorted(r.peak_at_s.items()))
        print(f"   RSS at start (MB) {floor}; peak reached at (s) {at}")
    print(f"   pod creates       {r.pod_creates} (expected {r.expected_pod_creates}; "
          f"duplicates {r.pod_creates - r.expected_pod_creates})")  # fmt: skip
    print(f"   passes            {r.passes} recorded, {r.overlapping_passes} overlapping")
    if r.owned_again_s is not None:
        print(f"   owned again       {r.owned_again_s:.1f} s")
    if r.drain_p99_le_s is not None:
        print(f"   drains            {r.drains}, p99 <= {r.drain_p99_le_s} s")
    for note in r.notes:
        print(f"   note              {note}")


def _growth_ratio(three: Scenario, one: Scenario) -> float | None:
    """The largest replica's growth above its start against the one replica's: what sharding
    divides, without the start every process has whatever its share (None without starts)."""
    if not three.floor_rss_mb or not one.floor_rss_mb:
        return None
    grown = max(three.peak_rss_mb[n] - three.floor_rss_mb.get(n, 0.0) for n in three.peak_rss_mb)
    one_grown = max(one.peak_rss_mb.values()) - max(one.floor_rss_mb.values())
    return grown / one_grown if one_grown > 0 else None


def print_table(results: list[Scenario]) -> None:
    one = next((r for r in results if r.name == "one"), None)
    for r in results:
        print_scenario(r)
        if one is not None and r.name == "three" and one.all_ready_s and one.peak_rss_mb:
            base = max(one.peak_rss_mb.values())
            print(f"   vs one replica    time {r.all_ready_s / one.all_ready_s:.2f}x (target <= 0.5x);"
                  f" peak RSS per replica {max(r.peak_rss_mb.values()) / base:.2f}x"
                  " (target <= 0.45x)")  # fmt: skip
            growth = _growth_ratio(r, one)
            if growth is not None:
                print(f"   above the start   {growth:.3f}x (a third is the whole share divided)")
    threes = [r for r in results if r.name == "three" and r.peak_rss_mb and r.all_ready_s]
    if one is not None and one.peak_rss_mb and one.all_ready_s and len(threes) > 1:
        base = max(one.peak_rss_mb.values())
        ratios = sorted(max(r.peak_rss_mb.values()) / base for r in threes)
        times = sorted(r.all_ready_s / one.all_ready_s for r in threes)
        print(f"== three x {len(threes)} against one: peak RSS per replica "
              f"{statistics.median(ratios):.3f}x (min {ratios[0]:.3f}, max {ratios[-1]:.3f}); time "
              f"{statistics.median(times):.2f}x (min {times[0]:.2f}, max {times[-1]:.2f})")  # fmt: skip


def keep_logs(workdir: Path, kept: Path) -> None:
    """Copies a scenario's replica logs and pass records into ``kept``."""
    kept.mkdir(parents=True, exist_ok=True)
    for path in [*workdir.glob("*.log"), *workdir.glob("*.jsonl"), *workdir.glob("*.trace")]:
        shutil.copy(path, kept / path.name)


async def main_async(args: argparse.Namespace) -> list[Scenario]:
    results: list[Scenario] = []
    runs: Counter[str] = Counter()
    for name in args.scenarios.split(","):
        runs[name] += 1
        kept_as = name if runs[name] == 1 else f"{name}-{runs[name]}"  # a repeat keeps its own
        with tempfile.TemporaryDirectory(prefix=f"rayop-sharded-{name}-") as tmp:
            workdir = Path(tmp)
            try:
                if name in ("one", "three"):
                    result = await scenario_plain(args, workdir, 1 if name == "one" else 3)
                elif name == "kill":
                    result = await scenario_kill(args, workdir)
                elif name == "scale":
                    result = await scenario_scale(args, workdir)
                else:
                    raise SystemExit(f"unknown scenario {name!r}")
            finally:
                if args.keep_logs is not None:
                    keep_logs(workdir, args.keep_logs / kept_as)
        print(f"{name}: done ({os.getloadavg()[0]:.1f} load)")
        print_scenario(result)
        print(flush=True)
        results.append(result)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--qps", type=float, default=100.0)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=1, help="--reconcile-concurrency")
    parser.add_argument("--pod-start", type=float, default=1.0)
    parser.add_argument("--poll", type=float, default=1.0, help="seconds between readiness reads")
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--scenarios", default="one,three,kill,scale")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--log-level", default="warning", help="the replicas' --log-level")
    parser.add_argument("--keep-logs", type=Path, help="copy replica logs and pass records here")
    parser.add_argument("--trace", action="store_true",
                        help="run replicas under tracemalloc (traced_replica.py); times mean nothing")  # fmt: skip
    parser.add_argument("--probe", action="store_true",
                        help="as --trace, without tracemalloc: allocator figures, real times")  # fmt: skip
    args = parser.parse_args()
    started = os.getloadavg()
    results = asyncio.run(main_async(args))
    print(f"\n{args.clusters} RayClusters x {args.workers} workers, --qps {args.qps} "
          f"--burst {args.burst} per replica; load average {started[0]:.1f} at start, "
          f"{os.getloadavg()[0]:.1f} at end")  # fmt: skip
    print_table(results)
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=2))


if __name__ == "__main__":
    main()
