"""The chaos campaign's users: a mixed ray.io workload and the actions users take on it
(benchmarks/chaos.py; not a test).

RayClusters scaled up and down, suspended and resumed, deleted and replaced; RayJobs in the four
submission modes (the campaign plays what the simulation does not run: the SidecarMode
submitter container and the InteractiveMode user, each submitting once); RayServices upgraded
(a new head template: a new cluster), their Serve config edited and their workers scaled (in
place); RayJobs deleted. Every user request goes through the API server, under the same faults as
the operator's, and is retried until it lands (a user retrying ``kubectl``).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

import yaml
from chaos_schedule import Action

from rayop.api.common import format_time
from rayop.kube.client import KubeClient
from rayop.kube.errors import ApiError, Conflict, NotFound
from rayop.kube.resources import PODS, RAY_CLUSTERS, RAY_JOBS, RAY_SERVICES
from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.sim.dashboard.jobs import TERMINAL, DashboardHttpError

__all__ = ["MODES", "Workload"]

log = logging.getLogger("chaos.workload")
Obj = dict[str, Any]
T = TypeVar("T")

MODES = ("HTTPMode", "K8sJobMode", "SidecarMode", "InteractiveMode")
IMAGE = "rayproject/ray:2.52.0"
USER_RETRY_SECONDS = 60.0
MAX_RAYJOBS = 8


def _group(name: str, replicas: int) -> Obj:
    return {
        "groupName": name,
        "replicas": replicas,
        "minReplicas": 0,
        "maxReplicas": 6,
        "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "ray-worker", "image": IMAGE}]}},
    }


def cluster_spec(replicas: int) -> Obj:
    """A small cluster: a head and one worker group of ``replicas``."""
    return {
        "rayVersion": "2.52.0",
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "ray-head", "image": IMAGE}]}},
        },
        "workerGroupSpecs": [_group("workers", replicas)],
    }


def raycluster(name: str, replicas: int) -> Obj:
    """A standalone RayCluster."""
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name},
            "spec": cluster_spec(replicas)}  # fmt: skip


def rayjob(name: str, mode: str, *, shutdown: bool) -> Obj:
    """A RayJob of one submission mode, with its own one-worker cluster."""
    spec: Obj = {
        "entrypoint": "python -c 'print(1)'",
        "submissionMode": mode,
        "rayClusterSpec": cluster_spec(1),
    }
    if shutdown:
        spec.update(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=1)
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name}, "spec": spec}


def serve_config(rev: int) -> str:
    """A Serve config of two applications; ``rev`` changes an import path."""
    apps = [
        {"name": "app0", "import_path": f"mod0.rev{rev}:app", "route_prefix": "/app0"},
        {"name": "app1", "import_path": "mod1:app", "route_prefix": "/app1"},
    ]
    return yaml.safe_dump({"applications": apps})


def rayservice(name: str) -> Obj:
    """A RayService whose old clusters go 2 s after an upgrade."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": name},
        "spec": {
            "rayClusterDeletionDelaySeconds": 2,
            "serveConfigV2": serve_config(0),
            "rayClusterConfig": cluster_spec(1),
        },
    }


@dataclass
class Workload:
    """The users of one seed's namespace.

    Args:
        cp: The plane (its simulated dashboards, for the sidecar and interactive players).
        client: The users' client (admin).
        namespace: Where everything lives.
    """

    cp: EmbeddedControlPlane
    client: KubeClient
    namespace: str
    clusters: list[str] = field(default_factory=list)
    rayjobs: dict[str, str] = field(default_factory=dict)
    rayservices: list[str] = field(default_factory=list)
    done: dict[str, int] = field(default_factory=dict)
    created: dict[str, int] = field(default_factory=dict)
    players: list[asyncio.Task[None]] = field(default_factory=list)
    player_submissions: int = 0
    _serial: int = 0

    def _next(self, prefix: str) -> str:
        self._serial += 1
        return f"{prefix}-{self._serial}"

    async def _retry(self, what: str, call: Callable[[], Awaitable[T]]) -> T | None:
        """Runs a user request until it lands; None when the object is gone."""
        deadline = time.monotonic() + USER_RETRY_SECONDS
        while True:
            try:
                return await call()
            except NotFound:
                return None
            except (ApiError, OSError, TimeoutError) as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"user request {what} kept failing: {exc!r}") from exc
                await asyncio.sleep(0.2)

    async def _create(self, resource: Any, obj: Obj) -> None:
        body = copy.deepcopy(obj)
        body["metadata"]["namespace"] = self.namespace
        await self._retry(
            f"create {obj['metadata']['name']}",
            lambda: self.client.create(resource, body, namespace=self.namespace),
        )
        self.created[resource.plural] = self.created.get(resource.plural, 0) + 1

    async def _edit(self, resource: Any, name: str, mutate: Callable[[Obj], None]) -> None:
        async def once() -> Obj:
            obj = await self.client.get(resource, name, namespace=self.namespace)
            mutate(obj)
            return await self.client.update(resource, obj)

        async def until_no_conflict() -> Obj | None:
            while True:
                try:
                    return await once()
                except Conflict:
                    await asyncio.sleep(0.05)

        await self._retry(f"edit {name}", until_no_conflict)

    async def _delete(self, resource: Any, name: str) -> None:
        await self._retry(
            f"delete {name}", lambda: self.client.delete(resource, name, namespace=self.namespace)
        )

    # -- the initial workload --------------------------------------------------------------

    async def populate(self) -> None:
        """Creates the starting objects: 3 clusters, a RayJob of each mode, 2 RayServices."""
        for i in range(3):
            await self.new_cluster(1 + i)
        for i, mode in enumerate(MODES):
            await self.new_rayjob(mode, shutdown=i % 2 == 0)
        for _ in range(2):
            name = self._next("rs")
            await self._create(RAY_SERVICES, rayservice(name))
            self.rayservices.append(name)

    async def new_cluster(self, replicas: int) -> None:
        name = self._next("rc")
        await self._create(RAY_CLUSTERS, raycluster(name, replicas))
        self.clusters.append(name)

    async def new_rayjob(self, mode: str, *, shutdown: bool) -> None:
        name = self._next(f"rj-{mode[:-4].lower()}")
        await self._create(RAY_JOBS, rayjob(name, mode, shutdown=shutdown))
        self.rayjobs[name] = mode
        if mode == "SidecarMode":
            self.players.append(asyncio.create_task(self._play_sidecar(name), name=name))
        elif mode == "InteractiveMode":
            self.players.append(asyncio.create_task(self._play_interactive(name), name=name))

    # -- actions ---------------------------------------------------------------------------

    async def act(self, action: Action) -> None:
        """Runs one planned user action (a no-op when it has nothing to act on)."""
        kind, pick, value = action.kind, action.pick, action.value
        if kind in ("scale-cluster", "edit-cluster", "replace-cluster") and self.clusters:
            name = self.clusters[pick % len(self.clusters)]
            if kind == "scale-cluster":
                await self._edit(RAY_CLUSTERS, name, _set_replicas(value % 5))
            elif kind == "edit-cluster":
                await self._edit(RAY_CLUSTERS, name, _toggle_suspend)
            else:
                await self._delete(RAY_CLUSTERS, name)
                self.clusters.remove(name)
                await self.new_cluster(value % 4)
        elif kind == "new-rayjob" and len(self.rayjobs) < MAX_RAYJOBS:
            await self.new_rayjob(MODES[value % 4], shutdown=pick % 2 == 0)
        elif kind == "delete-rayjob" and self.rayjobs:
            name = sorted(self.rayjobs)[pick % len(self.rayjobs)]
            await self._delete(RAY_JOBS, name)
            del self.rayjobs[name]
        elif kind in ("upgrade-rayservice", "edit-rayservice", "scale-rayservice"):
            name = self.rayservices[pick % len(self.rayservices)]
            mutate = {
                "upgrade-rayservice": _bump_head_env(value),
                "edit-rayservice": _set_serve_rev(value),
                "scale-rayservice": _set_service_replicas(value % 3),
            }[kind]
            await self._edit(RAY_SERVICES, name, mutate)
        else:
            return
        self.done[kind] = self.done.get(kind, 0) + 1

    # -- players of what the simulation does not run ---------------------------------------

    async def _status(self, name: str) -> Obj | None:
        obj = await self._retry(
            f"get {name}", lambda: self.client.get(RAY_JOBS, name, namespace=self.namespace)
        )
        return None if obj is None else dict(obj.get("status") or {})

    async def _play_interactive(self, name: str) -> None:
        """The InteractiveMode user: once the RayJob waits, submits with ``ray job submit`` to
        its cluster once, then sets ``spec.jobId``."""
        job_id = f"{name}-by-user"
        while True:
            status = await self._status(name)
            if status is None:
                return
            cluster = status.get("rayClusterName")
            dash = self.cp.dashboards.for_cluster(self.namespace, cluster) if cluster else None
            if status.get("jobDeploymentStatus") == "Waiting" and dash is not None:
                break
            await asyncio.sleep(0.3)
        dash.submit_job({"entrypoint": "python my_script.py", "submission_id": job_id})
        self.player_submissions += 1

        def set_job_id(obj: Obj) -> None:
            obj["spec"]["jobId"] = job_id

        await self._edit(RAY_JOBS, name, set_job_id)

    async def _play_sidecar(self, name: str) -> None:
        """The SidecarMode ``ray-job-submitter`` container: submits the RayJob's job once the
        head's dashboard is up, waits until it ends, then terminates (exit 1 when it FAILED)."""
        while True:
            status = await self._status(name)
            if status is None:
                return
            cluster, job_id = status.get("rayClusterName"), status.get("jobId")
            dash = self.cp.dashboards.for_cluster(self.namespace, cluster) if cluster else None
            if dash is not None and job_id:
                break
            await asyncio.sleep(0.3)
        obj = await self._retry(
            f"get {name}", lambda: self.client.get(RAY_JOBS, name, namespace=self.namespace)
        )
        if obj is None:
            return
        try:
            dash.submit_job({"entrypoint": obj["spec"]["entrypoint"], "submission_id": job_id})
            self.player_submissions += 1
        except DashboardHttpError:
            pass  # already there: the container ran before (it never submits twice)
        while dash.job_status(job_id) not in TERMINAL:
            if dash.closed:
                return
            await asyncio.sleep(0.3)
        code = 1 if dash.job_status(job_id) == "FAILED" else 0
        await self._terminate_submitter(str(cluster), code)

    async def _terminate_submitter(self, cluster: str, code: int) -> None:
        async def once() -> Obj | None:
            pods = await self.client.list(
                PODS, namespace=self.namespace,
                label_selector=f"ray.io/cluster={cluster},ray.io/node-type=head",
            )  # fmt: skip
            if not pods["items"]:
                return None
            pod = pods["items"][0]
            now = format_time(datetime.now(UTC))
            for status in (pod.get("status") or {}).get("containerStatuses") or []:
                if status["name"] == "ray-job-submitter":
                    terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                  "startedAt": now, "finishedAt": now}  # fmt: skip
                    status.update(state={"terminated": terminated}, ready=False, started=False)
            return await self.client.update_status(PODS, pod)

        await self._retry(f"terminate the submitter of {cluster}", once)

    async def stop(self) -> None:
        """Cancels the players still waiting."""
        for task in self.players:
            task.cancel()
        await asyncio.gather(*self.players, return_exceptions=True)


def _set_replicas(n: int) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        obj["spec"]["workerGroupSpecs"][0]["replicas"] = n

    return mutate


def _toggle_suspend(obj: Obj) -> None:
    obj["spec"]["suspend"] = not obj["spec"].get("suspend", False)


def _bump_head_env(value: int) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        head = obj["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
        head["containers"][0]["env"] = [{"name": "CHAOS_REVISION", "value": str(value)}]

    return mutate


def _set_serve_rev(value: int) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        obj["spec"]["serveConfigV2"] = serve_config(value)

    return mutate


def _set_service_replicas(n: int) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        obj["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["replicas"] = n

    return mutate
