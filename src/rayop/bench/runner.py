"""Runs a scenario once per concurrency value and measures it (:func:`run_bench`).

For each value: a fresh API server (see :mod:`rayop.bench.environment`), the CRDs, the operator
with ``--reconcile-concurrency`` set to the value, the scenario's unmeasured ``prepare``, then
the measured phase: the scenario's load until every cluster is ready. Meanwhile the operator's
registry is sampled every 0.5 s (active workers against the maximum, queue depth, API latency
excluding client throttling, RSS). At the
end the histograms are read as differences over the measured phase, and the API server's
request counts give the requests by verb and the pod creations.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from rayop.advise.advice import advise
from rayop.advise.errors import AdviseInputError
from rayop.advise.evidence import Scrape, server_latency
from rayop.advise.exposition import Snapshot
from rayop.advise.identity import identify
from rayop.advise.window_file import save as save_window
from rayop.bench.environment import (
    ControlPlane,
    ExistingCluster,
    ExternalOperator,
    InProcessControlPlane,
    InProcessOperator,
    OperatorUnderTest,
    RequestCounts,
    ServerSettings,
    SubprocessControlPlane,
)
from rayop.bench.latency_step import LatencyStep, reduction_after
from rayop.bench.launched_operator import LaunchedOperator, OperatorCommand
from rayop.bench.metrics import (
    WorkerSample,
    busy_fraction,
    mean_active,
    percentile,
)
from rayop.bench.metrics import sample_workers as read_sample
from rayop.bench.readiness import ReadinessTracker, Target, job_complete
from rayop.bench.results import ConcurrencyResult, LatencyStats
from rayop.bench.scenarios import ScenarioContext, ScenarioSpec, build_scenario
from rayop.controllers.assembly.operator_settings import OperatorSettings
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.kit import settings
from rayop.kube.client import KubeClient
from rayop.kube.errors import AlreadyExists, NotFound
from rayop.kube.resources import CRDS, NAMESPACES, RAY_CLUSTERS, RAY_JOBS
from rayop.runtime.supervisor import TaskSupervisor

SAMPLE_INTERVAL = 0.5
ADVISE_EVERY = 4
"""Every fourth sample's scrape is kept whole for ``rayop advise`` (one every 2 s)."""
NAMESPACE = "rayop-bench"

Progress = Callable[[int | str, str, int, int], None]
"""progress(concurrency or "auto", phase, clusters ready, clusters expected)."""


@dataclass(frozen=True, kw_only=True)
class BenchConfig:
    """Everything ``rayop bench`` was asked for."""

    scenario: ScenarioSpec = field(default_factory=ScenarioSpec)
    concurrency: tuple[int, ...] = (1, 2, 4, 8)
    adaptive: bool = False
    """Also run ``--reconcile-concurrency=auto`` (after the fixed values)."""
    max_concurrency: int = 16
    """The adaptive run's ``--max-reconcile-concurrency``."""
    repeat: int = 1
    """Runs of every setting (more than one measures the run-to-run noise)."""
    latency_step: LatencyStep | None = None
    """Raise the API latency mid-run (in-process plane only)."""
    server: ServerSettings = field(default_factory=ServerSettings)
    qps: float = 100.0
    burst: int = 200
    pod_create_concurrency: int = settings.POD_CALL_CONCURRENCY
    kubeconfig: str | None = None
    in_process: bool = False
    external_metrics_url: str | None = None
    """Set to observe an external operator instead of running rayop's."""
    external_operator_pid: int | None = None
    """The external operator's process id, for its CPU seconds and peak RSS."""
    operator_command: OperatorCommand | None = None
    """Set to start this operator (KubeRay, say) for every run instead of rayop's."""
    advise_windows: Path | None = None
    """Save each run's measured phase here as a ``rayop advise --save`` window
    (``c<N>.json``; ``c<N>-r<K>.json`` for repeats), to compare with ``--before``/``--after``."""
    keep_objects: bool = False
    """On an existing cluster, leave the run's namespace and objects in place (an idle phase
    measured after the run needs them); else the namespace is deleted at the end."""
    timeout: float = 600.0
    """Seconds one concurrency value may take before it is reported as timed out."""


async def run_bench(
    config: BenchConfig, *, progress: Progress | None = None
) -> list[ConcurrencyResult]:
    """Runs the scenario ``repeat`` times per setting (fixed values, then auto); blocks until done.

    Raises:
        ValueError: a latency step or the api-slowdown scenario was asked for without the
            in-process plane.
    """
    if config.latency_step is not None and (config.kubeconfig or not config.in_process):
        raise ValueError("--api-latency-step needs the in-process plane (--in-process)")
    if config.scenario.kind == "api-slowdown" and (config.kubeconfig or not config.in_process):
        raise ValueError("the api-slowdown scenario needs the in-process plane (--in-process)")
    settings = [(c, False) for c in config.concurrency]
    if config.adaptive:
        settings.append((config.max_concurrency, True))
    return [
        await run_once(config, c, progress=progress, adaptive=adaptive, repeat=r)
        for r in range(config.repeat)
        for c, adaptive in settings
    ]


def _control_plane(config: BenchConfig) -> ControlPlane:
    if config.kubeconfig:
        return ExistingCluster(config.kubeconfig)
    if config.in_process:
        return InProcessControlPlane(config.server)
    return SubprocessControlPlane(config.server)


async def install_crds(client: KubeClient) -> None:
    """Creates the ray.io CRDs (keeping existing ones); blocks until RayClusters are served."""
    from rayop.api.crds import build_crds

    for crd in build_crds():
        with contextlib.suppress(AlreadyExists):
            await client.create(CRDS, crd)
    async with asyncio.timeout(30):
        while True:
            try:
                await client.list(RAY_CLUSTERS, namespace="default", limit=1)
                return
            except NotFound:
                await asyncio.sleep(0.05)


async def run_once(
    config: BenchConfig,
    concurrency: int,
    *,
    progress: Progress | None = None,
    adaptive: bool = False,
    repeat: int = 0,
) -> ConcurrencyResult:
    """Measures one setting on a fresh control plane; blocks until done.

    Args:
        config: The bench settings.
        concurrency: The fixed worker count, or the ceiling when ``adaptive``.
        progress: Called as the run advances.
        adaptive: Run the operator with ``--reconcile-concurrency=auto``.
        repeat: Which run of this setting this is (recorded in the result).
    """
    label: int | str = "auto" if adaptive else concurrency
    if repeat:
        label = f"{label} #{repeat + 1}"

    def notify(_c: int | str, phase: str, ready: int, total: int) -> None:
        if progress is not None:
            progress(label, phase, ready, total)

    notify(concurrency, "starting", 0, 0)
    cp = _control_plane(config)
    async with cp, KubeClient(cp.config, qps=-1, user_agent="rayop-bench") as user:
        await install_crds(user)
        namespace = (
            NAMESPACE
            if cp.fresh
            else f"{NAMESPACE}-{'auto' if adaptive else concurrency}-{config.scenario.seed}-{repeat}"
        )
        with contextlib.suppress(AlreadyExists):
            await user.create(NAMESPACES, {"metadata": {"name": namespace}})
        operator = _operator(config, cp, concurrency, adaptive)
        try:
            async with operator:
                result = await _measure(config, concurrency, cp, user, operator, namespace, notify)
                return dataclasses.replace(result, adaptive=adaptive, repeat=repeat)
        finally:
            if not cp.fresh and not config.keep_objects:
                with contextlib.suppress(Exception):
                    await user.delete(NAMESPACES, namespace)


def _operator(
    config: BenchConfig, cp: ControlPlane, concurrency: int, adaptive: bool = False
) -> OperatorUnderTest:
    if config.external_metrics_url:
        return ExternalOperator(config.external_metrics_url, pid=config.external_operator_pid)
    if config.operator_command is not None:
        if adaptive:
            raise ValueError("--operator-command runs fixed --reconcile-concurrency values only")
        return LaunchedOperator(
            config.operator_command,
            cp.kubeconfig_file,
            concurrency=concurrency,
            qps=config.qps,
            burst=config.burst,
        )
    settings = OperatorSettings(
        reconcile_concurrency=1 if adaptive else concurrency,
        adaptive_concurrency=adaptive,
        max_reconcile_concurrency=concurrency,
        metrics_addr="0",
        health_probe_bind_address="0",
        enable_leader_election=False,
        qps=config.qps,
        burst=config.burst,
        options=OperatorOptions(),
        pod_create_concurrency=config.pod_create_concurrency,
        use_kubernetes_proxy=True,  # the bench's planes (embedded or real) lack cluster DNS
    )
    return InProcessOperator(cp.config, settings)


class _Sampler:
    """Samples the operator's gauges every 0.5 s in the background, and keeps every fourth
    scrape whole for ``rayop advise``."""

    def __init__(self, operator: OperatorUnderTest, tick: Callable[[], None]) -> None:
        self.operator = operator
        self.samples: list[WorkerSample] = []
        self.scrapes: list[Scrape] = []
        self._tick = tick
        self._proc = psutil.Process(operator.pid) if operator.pid else psutil.Process()
        self._t0 = time.monotonic()
        self._tasks = TaskSupervisor("bench sampler")

    @property
    def started(self) -> float:
        """time.monotonic() at which sampling began (``t`` of every sample counts from it)."""
        return self._t0

    def start(self) -> None:
        """Starts sampling in a task this sampler owns; never blocks."""
        self._t0 = time.monotonic()
        self._tasks.spawn(self._run(), name="sample")

    async def stop(self) -> None:
        """Stops sampling; blocks until the task has ended.

        Raises:
            ExceptionGroup: sampling had failed (the operator's metrics could not be read).
        """
        await self._tasks.stop()
        await self._tasks.wait()

    async def _run(self) -> None:
        previous: Snapshot | None = None
        while True:
            snap = await self.operator.snapshot()
            rss = 0.0
            if self.operator.in_process or self.operator.pid:
                with contextlib.suppress(psutil.Error):
                    rss = float(self._proc.memory_info().rss)
            t = time.monotonic() - self._t0
            sample = read_sample(snap, self.operator.controller, t, rss)
            if previous is not None:
                sample = dataclasses.replace(sample, api_latency=server_latency(previous, snap))
            previous = snap
            if len(self.samples) % ADVISE_EVERY == 0:
                self.scrapes.append(Scrape(t, snap))
            self.samples.append(sample)
            self._tick()
            await asyncio.sleep(SAMPLE_INTERVAL)


async def _measure(
    config: BenchConfig,
    concurrency: int,
    cp: ControlPlane,
    user: KubeClient,
    operator: OperatorUnderTest,
    namespace: str,
    notify: Progress,
) -> ConcurrencyResult:
    operator_started = time.monotonic()  # no item can have waited longer than the operator ran
    spec = config.scenario
    scenario = build_scenario(spec)
    tracker = ReadinessTracker(user, namespace)
    jobs = ReadinessTracker(user, namespace, resource=RAY_JOBS, check=job_complete)
    plane = cp if isinstance(cp, InProcessControlPlane) else None
    ctx = ScenarioContext(
        user, namespace, tracker, random.Random(spec.seed), jobs=jobs, plane=plane
    )
    await tracker.start()
    await jobs.start()

    def met() -> list[Target]:
        return [*tracker.met, *jobs.met]

    def pending() -> int:
        return tracker.pending + jobs.pending

    def tick(phase: str) -> Callable[[], None]:
        return lambda: notify(concurrency, phase, len(met()), len(met()) + pending())

    counts_start = await cp.request_counts(user)
    prepare_sampler = _Sampler(operator, tick("prepare"))
    prepare_sampler.start()
    timed_out = False
    try:
        async with asyncio.timeout(config.timeout):
            await scenario.prepare(ctx)
    except TimeoutError:
        timed_out = True
    await prepare_sampler.stop()
    tracker.finished.clear()

    before = await operator.snapshot()
    counts_before = await cp.request_counts(user)
    cpu0, t0 = operator_cpu_seconds(operator), time.monotonic()
    sampler = _Sampler(operator, tick("measure"))
    sampler.start()
    step = config.latency_step
    stepping = (
        asyncio.create_task(step.apply(cp), name="bench:latency-step")
        if step is not None and isinstance(cp, InProcessControlPlane)
        else None
    )
    if not timed_out:
        try:
            async with asyncio.timeout(config.timeout):
                await scenario.run(ctx)
                await tracker.wait_all()
                await jobs.wait_all()
        except TimeoutError:
            timed_out = True
    elapsed = time.monotonic() - t0
    stepped = stepping is not None and stepping.done() and not stepping.cancelled()
    if stepping is not None:
        stepping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await stepping
    cpu_end = operator_cpu_seconds(operator)
    cpu = None if cpu_end is None or cpu0 is None else cpu_end - cpu0
    await sampler.stop()
    after = await operator.snapshot()
    await asyncio.sleep(0.5)  # let late duplicate creates (if any) reach the server
    counts_after = await cp.request_counts(user)
    await tracker.stop()
    await jobs.stop()
    notify(concurrency, "done", len(met()), len(met()) + pending())

    measured = [t for t in met() if t.started >= t0]  # prepare's targets are not timed
    result = _result(
        config=config,
        concurrency=concurrency,
        operator=operator,
        before=before,
        after=after,
        requests=counts_after - counts_before,
        all_requests=counts_after - counts_start,
        samples=sampler.samples,
        measured=measured,
        elapsed=elapsed,
        max_wait=time.monotonic() - operator_started,
        cpu=cpu,
        ctx=ctx,
        timed_out=timed_out,
    )
    result = dataclasses.replace(result, advice=_advice(operator.controller, sampler.scrapes))
    if config.advise_windows is not None:
        if sampler.scrapes:
            _save_window(config.advise_windows, concurrency, sampler.scrapes)
        else:
            result.notes.append("no advise window saved: the measured phase had no scrape")
    slowed_at: float | None = None
    if stepped and step is not None:
        result.notes.append(step.note)
        slowed_at = step.after
    elif ctx.slowed_at is not None:
        slowed_at = ctx.slowed_at - sampler.started
    if slowed_at is not None:
        limit, fell = reduction_after(sampler.samples, slowed_at)
        result = dataclasses.replace(
            result,
            api_slowdown_at=round(slowed_at, 3),
            workers_at_slowdown=limit,
            workers_reduced_after=None if fell is None else round(fell, 3),
        )
    return result


def _advice(controller: str, scrapes: list[Scrape]) -> dict[str, Any] | None:
    """What ``rayop advise`` says of ``controller`` from the measured phase's scrapes."""
    if len(scrapes) < 2:
        return None
    try:
        operator = identify(scrapes[-1].snapshot, source="the bench's scrapes")
    except AdviseInputError:
        return None
    for verdict in advise(operator, "bench", scrapes).verdicts:
        if verdict.controller == controller:
            return verdict.to_json()
    return None


def window_path(directory: Path, concurrency: int | str, repeat: int = 0) -> Path:
    """Where ``--advise-windows`` puts one run's window."""
    return directory / (f"c{concurrency}-r{repeat + 1}.json" if repeat else f"c{concurrency}.json")


def _save_window(directory: Path, concurrency: int, scrapes: list[Scrape]) -> None:
    """Writes the measured phase's scrapes as an advise window (the next free repeat name).

    Raises:
        AdviseInputError: the scrapes name no operator advise knows (the run is not one).
    """
    directory.mkdir(parents=True, exist_ok=True)
    repeat = 0
    while window_path(directory, concurrency, repeat).exists():
        repeat += 1
    operator = identify(scrapes[-1].snapshot, source="the bench's scrapes")
    save_window(window_path(directory, concurrency, repeat), operator, "rayop bench", scrapes)


def operator_cpu_seconds(operator: OperatorUnderTest) -> float | None:
    """Returns the operator's CPU seconds so far: this process's when it runs here, the
    external process's (user + system, psutil) when its pid is known, else None."""
    if operator.in_process:
        return time.process_time()
    if operator.pid:
        with contextlib.suppress(psutil.Error):
            times = psutil.Process(operator.pid).cpu_times()
            return float(times.user + times.system)
    return None


def latency_stats(values: Sequence[float]) -> LatencyStats:
    """Returns count, p50, p95 and max of exact latencies."""
    return LatencyStats(
        count=len(values),
        p50=percentile(values, 0.5),
        p95=percentile(values, 0.95),
        max=max(values) if values else None,
    )


def pod_creates(counts: RequestCounts) -> int:
    """Returns the successful pod creations in ``counts``."""
    return sum(
        n for (verb, res, sub, code), n in counts.items()
        if verb == "create" and res == "pods" and not sub and code == "201"
    )  # fmt: skip


def _result(
    *,
    config: BenchConfig,
    concurrency: int,
    operator: OperatorUnderTest,
    before: Snapshot,
    after: Snapshot,
    requests: RequestCounts,
    all_requests: RequestCounts,
    samples: list[WorkerSample],
    measured: list[Target],
    elapsed: float,
    max_wait: float,
    cpu: float | None,
    ctx: ScenarioContext,
    timed_out: bool,
) -> ConcurrencyResult:
    name = operator.controller
    minutes = max(elapsed, 1e-9) / 60
    queue = after.histogram("workqueue_queue_duration_seconds", name=name) - before.histogram(
        "workqueue_queue_duration_seconds", name=name
    )
    recon = after.histogram(
        "controller_runtime_reconcile_time_seconds", controller=name
    ) - before.histogram("controller_runtime_reconcile_time_seconds", controller=name)
    api = after.histogram("rest_client_request_duration_seconds") - before.histogram(
        "rest_client_request_duration_seconds"
    )
    throttle = after.histogram("rest_client_rate_limiter_duration_seconds") - before.histogram(
        "rest_client_rate_limiter_duration_seconds"
    )

    def delta(metric: str, **match: str) -> int:
        return int(after.total(metric, **match) - before.total(metric, **match))

    errors = delta("controller_runtime_reconcile_errors_total", controller=name)
    # Every attempt by HTTP method; controller-runtime (KubeRay) exports this counter but not
    # the duration histogram, so it is the comparable request count of either operator.
    methods = after.by_label("rest_client_requests_total", "method")
    methods_before = before.by_label("rest_client_requests_total", "method")
    by_method = {m: int(n - methods_before.get(m, 0.0)) for m, n in sorted(methods.items()) if m}
    conflicts = delta("rest_client_requests_total", code="409")
    by_verb: Counter[str] = Counter()
    for (verb, _res, _sub, _code), n in requests.items():
        by_verb[verb] += n
    creates = pod_creates(all_requests)
    event_writes: Counter[str] = Counter()
    for (verb, res, _sub, _code), n in requests.items():
        if res == "events":
            event_writes[verb] += n
    recorded = after.by_label("rayop_events_recorded_total", "type")
    recorded_before = before.by_label("rayop_events_recorded_total", "type")
    unsent = after.by_label("rayop_events_unsent_total", "reason")
    unsent_before = before.by_label("rayop_events_unsent_total", "reason")
    latencies = [t.latency for t in measured if t.latency is not None]
    groups = sorted({t.group for t in measured if t.group})
    rss = max((s.rss_bytes for s in samples), default=0.0)
    spec = config.scenario
    return ConcurrencyResult(
        concurrency=concurrency,
        scenario=spec.kind,
        clusters=spec.clusters,
        workers=spec.workers,
        timed_out=timed_out,
        seconds_until_all_ready=round(elapsed, 3),
        ready_latency=latency_stats(latencies),
        ready_latency_by_group={
            g: latency_stats(
                [t.latency for t in measured if t.group == g and t.latency is not None]
            )
            for g in groups
        },
        queue_wait_p50=queue.quantile(0.5, upper=max_wait),
        queue_wait_p99=queue.quantile(0.99, upper=max_wait),
        queue_wait_mean=queue.mean,
        reconcile_time_p50=recon.quantile(0.5),
        reconcile_time_p99=recon.quantile(0.99),
        reconciles=int(recon.count),
        longest_reconcile_seconds=max((s.longest_running for s in samples), default=0.0),
        busy_fraction=busy_fraction(samples),
        mean_active_workers=mean_active(samples),
        queue_depth_max=max((s.queue_depth for s in samples), default=0.0),
        queue_depth_mean=sum(s.queue_depth for s in samples) / len(samples) if samples else 0.0,
        reconcile_errors=errors,
        reconcile_errors_per_minute=errors / minutes,
        conflicts=conflicts,
        conflicts_per_minute=conflicts / minutes,
        user_conflicts=ctx.user_conflicts,
        api_latency_mean=api.mean,
        api_server_latency_mean=(api.sum - throttle.sum) / api.count if api.count else None,
        api_latency_p50=api.quantile(0.5),
        api_latency_p99=api.quantile(0.99),
        operator_requests=int(api.count) or sum(by_method.values()),
        operator_requests_by_method={m: n for m, n in by_method.items() if n},
        throttle_wait_seconds=throttle.sum,
        throttle_wait_mean=throttle.mean,
        throttle_wait_p99=throttle.quantile(0.99),
        api_requests_by_verb=dict(sorted(by_verb.items())),
        pod_creates=creates,
        expected_pod_creates=ctx.expected_pod_creates,
        duplicate_pod_creates=max(0, creates - ctx.expected_pod_creates),
        event_writes_by_verb=dict(sorted(event_writes.items())),
        events_recorded=(
            int(sum(recorded.values()) - sum(recorded_before.values())) if recorded else None
        ),
        events_unsent_by_reason=(
            {r: int(n - unsent_before.get(r, 0.0)) for r, n in sorted(unsent.items()) if r}
            if unsent
            else None
        ),
        operator_cpu_seconds=cpu,
        operator_peak_rss_mb=rss / 2**20 if operator.in_process or operator.pid else None,
        samples=[(s.t, s.active_workers, s.max_workers, s.queue_depth) for s in samples],
        api_latency_samples=[(s.t, s.api_latency) for s in samples if s.api_latency is not None],
        notes=list(ctx.log),
    )
