"""The bench's load scenarios, reproducible from a seed.

Each scenario acts as users would, through the API, in one namespace. ``prepare`` builds the
starting state (not measured); ``run`` applies the measured load and returns once every action
has been issued (the runner then waits until every cluster is ready). While acting, a scenario
tells the :class:`~rayop.bench.readiness.ReadinessTracker` what "ready" means for each cluster
and adds to ``expected_pod_creates`` the pod creations the operator needs, so that any
creation beyond them counts as a duplicate.

- ``create``: N RayClusters of W workers at once.
- ``scale-storm``: N ready clusters all change their worker count at once (seeded sizes).
- ``churn``: clusters created at a steady rate; once more than a quarter of N are alive, the
  oldest ready one is deleted as each new one comes.
- ``head-of-line``: one cluster of 500 workers created first, then N-1 small ones (KubeRay
  #3909); their latencies are reported apart (groups ``big`` and ``small``).
- ``conflict-storm``: N clusters created at once while users read-modify-write them (labels,
  annotations and +1 worker) with optimistic concurrency, racing the operator's status writes;
  which edit comes when, and what it writes, is drawn from the seed before the first one.
- ``rayjob-mix``: N/2 RayClusters and N/2 RayJobs (K8sJobMode, each with its own cluster of W
  workers, deleted when the job finishes) created at once; a RayJob counts as ready when
  ``jobDeploymentStatus`` is ``Complete`` (group ``rayjob``; clusters are group ``raycluster``).
- ``api-slowdown``: N clusters created at ``churn_rate`` per second; once half have been
  created the embedded API server's added latency is raised to ``slowdown_latency`` (the
  in-process plane only): the test of an adaptive operator shedding workers as its API slows.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from rayop.api.common import API_VERSION
from rayop.bench.latency_step import LatencyControl
from rayop.bench.readiness import ReadinessTracker
from rayop.kube.client import KubeClient
from rayop.kube.errors import Conflict, NotFound
from rayop.kube.resources import RAY_CLUSTERS, RAY_JOBS

SCENARIOS = (
    "create",
    "scale-storm",
    "churn",
    "head-of-line",
    "conflict-storm",
    "rayjob-mix",
    "api-slowdown",
)
"""Scenario names accepted by ``rayop bench --scenario``."""

RAY_IMAGE = "rayproject/ray:2.46.0"
WORKER_GROUP = "workers"


@dataclass(frozen=True, kw_only=True)
class ScenarioSpec:
    """The shape of a scenario run."""

    kind: str = "create"
    clusters: int = 100
    workers: int = 10
    seed: int = 0
    big_workers: int = 500
    """Head-of-line: workers of the one big cluster."""
    churn_rate: float = 5.0
    """Churn: clusters created per second."""
    edits_per_cluster: int = 3
    """Conflict storm: user read-modify-writes per cluster."""
    edit_window: float = 10.0
    """Conflict storm: seconds after the creates over which the edits are spread."""
    slowdown_latency: float = 0.1
    """API slowdown: seconds added to every non-watch request from halfway on."""


@dataclass
class ScenarioContext:
    """What a scenario acts through and what it reports back."""

    client: KubeClient
    namespace: str
    tracker: ReadinessTracker
    rng: random.Random
    jobs: ReadinessTracker | None = None
    """Times RayJobs (the runner provides it)."""
    expected_pod_creates: int = 0
    user_conflicts: int = 0
    log: list[str] = field(default_factory=list)
    plane: LatencyControl | None = None
    """The control plane, when its API latency can change while it runs (in-process)."""
    slowed_at: float | None = None
    """time.monotonic() at which the scenario slowed the API server (None: it did not)."""


class Scenario(Protocol):
    """A load scenario."""

    spec: ScenarioSpec

    async def prepare(self, ctx: ScenarioContext) -> None:
        """Builds the starting state; blocks until it is ready (not measured)."""

    async def run(self, ctx: ScenarioContext) -> None:
        """Applies the measured load; blocks until every action has been issued."""


class _ScenarioBase:
    """Holds the spec; starts from an empty namespace unless a subclass prepares one."""

    def __init__(self, spec: ScenarioSpec) -> None:
        self.spec = spec

    async def prepare(self, ctx: ScenarioContext) -> None:
        """Nothing to prepare."""


def ray_object(kind: str, name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Returns a ray.io/v1 object of ``kind`` named ``name`` in ``namespace``."""
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def raycluster_spec(workers: int) -> dict[str, Any]:
    """Returns a RayCluster spec: a head and one worker group of ``workers`` replicas."""
    container = {
        "name": "ray",
        "image": RAY_IMAGE,
        "resources": {"limits": {"cpu": "1", "memory": "2Gi"}},
    }
    template = {"spec": {"containers": [container]}}
    return {
        "rayVersion": "2.46.0",
        "headGroupSpec": {"rayStartParams": {}, "template": template},
        "workerGroupSpecs": [
            {
                "groupName": WORKER_GROUP,
                "replicas": workers,
                "minReplicas": 0,
                "maxReplicas": max(1000, workers),
                "rayStartParams": {},
                "template": template,
            }
        ],
    }


def raycluster(name: str, workers: int, *, namespace: str) -> dict[str, Any]:
    """Returns a RayCluster with a head and one worker group of ``workers`` replicas."""
    return ray_object("RayCluster", name, namespace, raycluster_spec(workers))


def cluster_names(count: int, prefix: str = "rc") -> list[str]:
    """Returns ``count`` stable cluster names."""
    return [f"{prefix}-{i:04d}" for i in range(count)]


async def create_cluster(ctx: ScenarioContext, name: str, workers: int, *, group: str = "") -> None:
    """Creates one RayCluster and registers its target (latency clock starts at the request)."""
    started = time.monotonic()
    created = await ctx.client.create(
        RAY_CLUSTERS, raycluster(name, workers, namespace=ctx.namespace), namespace=ctx.namespace
    )
    ctx.expected_pod_creates += workers + 1
    ctx.tracker.expect(
        name,
        workers=workers,
        generation=int(created["metadata"].get("generation", 1)),
        group=group,
        started=started,
    )


async def create_all(ctx: ScenarioContext, names: list[str], workers: int, group: str = "") -> None:
    """Creates every cluster at once."""
    await asyncio.gather(*(create_cluster(ctx, n, workers, group=group) for n in names))


class CreateScenario(_ScenarioBase):
    """N clusters x W workers, created at once."""

    async def run(self, ctx: ScenarioContext) -> None:
        """Creates every cluster."""
        await create_all(ctx, cluster_names(self.spec.clusters), self.spec.workers)


class ScaleStormScenario(_ScenarioBase):
    """N ready clusters change their worker count at once (each to a seeded new size)."""

    async def prepare(self, ctx: ScenarioContext) -> None:
        """Creates the clusters and waits until they are ready."""
        await create_all(ctx, cluster_names(self.spec.clusters), self.spec.workers)
        await ctx.tracker.wait_all()

    async def run(self, ctx: ScenarioContext) -> None:
        """Patches every cluster's replicas at once."""
        w = self.spec.workers
        sizes = [s for s in range(max(0, w // 2), 2 * w + 1) if s != w] or [w + 1]

        async def scale(name: str) -> None:
            new = ctx.rng.choice(sizes)
            started = time.monotonic()
            patched = await ctx.client.patch(
                RAY_CLUSTERS,
                name,
                {"spec": {"workerGroupSpecs": [_group_patch(new)]}},
                namespace=ctx.namespace,
            )
            ctx.expected_pod_creates += max(0, new - w)
            ctx.tracker.expect(
                name,
                workers=new,
                generation=int(patched["metadata"]["generation"]),
                started=started,
            )

        await asyncio.gather(*(scale(n) for n in cluster_names(self.spec.clusters)))


def _group_patch(replicas: int) -> dict[str, Any]:
    # A merge patch replaces the whole list, so the full group is sent.
    return dict(raycluster_spec(replicas)["workerGroupSpecs"][0])


class ChurnScenario(_ScenarioBase):
    """Clusters created at a steady rate while the oldest ready ones are deleted."""

    async def run(self, ctx: ScenarioContext) -> None:
        """Creates N clusters at ``churn_rate`` per second, keeping about N/4 alive."""
        keep = max(2, self.spec.clusters // 4)
        alive: list[str] = []
        loop = asyncio.get_running_loop()
        start = loop.time()
        async with asyncio.TaskGroup() as deletes:
            for i, name in enumerate(cluster_names(self.spec.clusters)):
                delay = start + i / self.spec.churn_rate - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                await create_cluster(ctx, name, self.spec.workers)
                alive.append(name)
                if len(alive) > keep:
                    victim = next((n for n in alive if ctx.tracker.ready(n)), None)
                    if victim is not None:
                        alive.remove(victim)
                        deletes.create_task(self._delete(ctx, victim))

    @staticmethod
    async def _delete(ctx: ScenarioContext, name: str) -> None:
        ctx.tracker.retire(name)
        with contextlib.suppress(NotFound):
            await ctx.client.delete(RAY_CLUSTERS, name, namespace=ctx.namespace)


class HeadOfLineScenario(_ScenarioBase):
    """One big cluster first, then N-1 small ones (KubeRay #3909)."""

    async def run(self, ctx: ScenarioContext) -> None:
        """Creates the big cluster, then every small one at once."""
        await create_cluster(ctx, "big-0000", self.spec.big_workers, group="big")
        small = cluster_names(max(0, self.spec.clusters - 1), prefix="small")
        await create_all(ctx, small, self.spec.workers, group="small")


class ConflictStormScenario(_ScenarioBase):
    """Clusters created at once while users edit them with read-modify-write updates."""

    async def run(self, ctx: ScenarioContext) -> None:
        """Creates every cluster, then runs every edit at its seeded time."""
        names = cluster_names(self.spec.clusters)
        await create_all(ctx, names, self.spec.workers)
        edits = sorted(
            (ctx.rng.uniform(0, self.spec.edit_window), name, ctx.rng.random() < 0.5)
            for name in names
            for _ in range(self.spec.edits_per_cluster)
        )
        # Every random value is drawn here, in order: edits running concurrently draw nothing,
        # so the same seed sends the same edits however the run's timing falls.
        touched = [str(ctx.rng.random()) for _ in edits]
        start = asyncio.get_running_loop().time()
        await asyncio.gather(
            *(
                self._edit(ctx, start + at, n, grow, mark)
                for (at, n, grow), mark in zip(edits, touched, strict=True)
            )
        )

    async def _edit(
        self, ctx: ScenarioContext, at: float, name: str, grow: bool, touched: str
    ) -> None:
        await asyncio.sleep(max(0.0, at - asyncio.get_running_loop().time()))
        for _ in range(100):
            obj = await ctx.client.get(RAY_CLUSTERS, name, namespace=ctx.namespace)
            meta = obj["metadata"]
            labels = meta.setdefault("labels", {})
            labels["bench/edits"] = str(int(labels.get("bench/edits", "0")) + 1)
            meta.setdefault("annotations", {})["bench/touched"] = touched
            group = obj["spec"]["workerGroupSpecs"][0]
            if grow:
                group["replicas"] = int(group.get("replicas", 0)) + 1
            try:
                updated = await ctx.client.update(RAY_CLUSTERS, obj)
            except Conflict:
                ctx.user_conflicts += 1
                continue
            if grow:
                ctx.expected_pod_creates += 1
            ctx.tracker.expect(
                name,
                workers=int(updated["spec"]["workerGroupSpecs"][0]["replicas"]),
                generation=int(updated["metadata"]["generation"]),
            )
            return
        ctx.log.append(f"gave up editing {name} after 100 conflicts")


def rayjob(name: str, workers: int, *, namespace: str) -> dict[str, Any]:
    """Returns a RayJob whose cluster (head + ``workers``) is deleted once the job finishes."""
    spec = {
        "entrypoint": "python -c 'print(1)'",
        "shutdownAfterJobFinishes": True,
        "rayClusterSpec": raycluster_spec(workers),
    }
    return ray_object("RayJob", name, namespace, spec)


class RayJobMixScenario(_ScenarioBase):
    """Half RayClusters, half RayJobs, created at once."""

    async def run(self, ctx: ScenarioContext) -> None:
        """Creates every RayCluster and RayJob."""
        jobs = ctx.jobs
        if jobs is None:
            raise RuntimeError("the rayjob-mix scenario needs a RayJob tracker")
        n_jobs = self.spec.clusters // 2
        clusters = cluster_names(self.spec.clusters - n_jobs)

        async def create_job(name: str) -> None:
            started = time.monotonic()
            await ctx.client.create(
                RAY_JOBS, rayjob(name, self.spec.workers, namespace=ctx.namespace),
                namespace=ctx.namespace,
            )  # fmt: skip
            ctx.expected_pod_creates += self.spec.workers + 1
            jobs.expect(name, workers=self.spec.workers, group="rayjob", started=started)

        await asyncio.gather(
            create_all(ctx, clusters, self.spec.workers, group="raycluster"),
            *(create_job(n) for n in cluster_names(n_jobs, prefix="job")),
        )


class ApiSlowdownScenario(_ScenarioBase):
    """Clusters created at a steady rate; the API server slows down once half are created."""

    async def run(self, ctx: ScenarioContext) -> None:
        """Creates N clusters at ``churn_rate`` per second, raising the API latency halfway.

        Raises:
            ValueError: the control plane cannot change its latency while it runs.
        """
        plane = ctx.plane
        if plane is None:
            raise ValueError("the api-slowdown scenario needs the in-process plane (--in-process)")
        names = cluster_names(self.spec.clusters)
        loop = asyncio.get_running_loop()
        start = loop.time()
        async with asyncio.TaskGroup() as creates:
            for i, name in enumerate(names):
                delay = start + i / self.spec.churn_rate - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                if i == len(names) // 2:
                    plane.set_api_latency(self.spec.slowdown_latency)
                    ctx.slowed_at = time.monotonic()
                    ctx.log.append(
                        f"API latency raised to {self.spec.slowdown_latency:g} s after {i} of "
                        f"{len(names)} clusters were created"
                    )
                creates.create_task(create_cluster(ctx, name, self.spec.workers))


def build_scenario(spec: ScenarioSpec) -> Scenario:
    """Returns the scenario named ``spec.kind``.

    Raises:
        ValueError: the name is not one of :data:`SCENARIOS`.
    """
    kinds: dict[str, Callable[[ScenarioSpec], Scenario]] = {
        "create": CreateScenario,
        "scale-storm": ScaleStormScenario,
        "churn": ChurnScenario,
        "head-of-line": HeadOfLineScenario,
        "conflict-storm": ConflictStormScenario,
        "rayjob-mix": RayJobMixScenario,
        "api-slowdown": ApiSlowdownScenario,
    }
    try:
        factory = kinds[spec.kind]
    except KeyError:
        raise ValueError(f"unknown scenario {spec.kind!r}; one of {', '.join(SCENARIOS)}") from None
    return factory(spec)
