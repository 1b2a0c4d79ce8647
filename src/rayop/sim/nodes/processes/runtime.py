"""The process runtime the kubelet uses under ``--real-ray`` (and the plane's Service routing).

:class:`ProcessRuntime` owns a directory per control plane (``/tmp/rr-*``: one sub-directory
per pod with its volumes, home and Ray temp dir, so two clusters never share a Ray session
directory), hands out loopback pod IPs, runs each pod with a :class:`PodRunner`, and answers:

- :meth:`process_env`: the :class:`~rayop.sim.nodes.container_exec.ContainerExecutor` that
  ``pods/exec`` and ``pods/portforward`` use;
- :meth:`resolve_service` / :meth:`resolve_url`: a Service's DNS name to the IP of a pod behind
  it (ready pods first) for the processes' commands, and ``(namespace, service, port)`` to a
  base URL for the API server's services proxy and the operator's direct dashboard calls;
- :meth:`close`: every process the plane started ends, by the ``RAYOP_PLANE`` marker.

At start it checks once whether containers can get mount namespaces here
(:func:`~.mount_namespace.namespace_support`; logged when they cannot). The plane sets
:attr:`ProcessRuntime.endpoint` once its API server listens: pods then get their service
account's token and ``KUBERNETES_SERVICE_*`` (:mod:`.service_account`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rayop.apimachinery.labels import label_selector_from_dict
from rayop.apimachinery.objects import Obj
from rayop.sim.machinery.timestamps import now_rfc3339
from rayop.sim.nodes.container_exec import ContainerProcessEnv
from rayop.sim.nodes.container_logs import PodLogs
from rayop.sim.nodes.pod_status import condition_true
from rayop.sim.nodes.processes.container_process import PLANE_ENV, kill_tree
from rayop.sim.nodes.processes.loopback import LoopbackAddresses, build_shim
from rayop.sim.nodes.processes.mount_namespace import namespace_support
from rayop.sim.nodes.processes.pod_env import Lookup
from rayop.sim.nodes.processes.pod_runner import PodRunner, RunnerContext, Write
from rayop.sim.nodes.processes.ray_install import RayInstall, find_ray
from rayop.sim.nodes.processes.service_account import PlaneEndpoint
from rayop.sim.storage.store import Store

__all__ = ["ProcessRuntime"]

log = logging.getLogger(__name__)


class ProcessRuntime:
    """Runs pods as local processes (see the module docstring).

    Args:
        store: The plane's object store (Services, pods, ConfigMaps, Secrets are read from it).
        logs: The kubelet's container logs.
        ray_env: A virtualenv with Ray (None: ``$RAYOP_RAY_ENV`` or this interpreter's).
        cache_dir: Where the loopback shim is built once.
        backoff: Base of the crash-loop back-off in seconds.
        ray: The Ray to use, found already (``ray_env`` is then not looked at).

    Raises:
        RayNotInstalled: Ray is not installed where it was looked for.
        ShimBuildError: the loopback shim could not be compiled.
    """

    def __init__(
        self,
        store: Store,
        logs: PodLogs,
        *,
        ray_env: str | None = None,
        cache_dir: Path | None = None,
        backoff: float = 10.0,
        ray: RayInstall | None = None,
    ) -> None:
        self.store = store
        self.ray: RayInstall = ray or find_ray(ray_env)
        cache = cache_dir or Path.home() / ".cache" / "rayop" / "loopback-shim"
        self.shim = build_shim(cache)
        self.plane_id = secrets.token_hex(6)
        self.root = Path(tempfile.mkdtemp(prefix="rr-", dir="/tmp"))
        self.addresses = LoopbackAddresses()
        self._runners: dict[str, PodRunner] = {}
        self._count = 0
        self.endpoint: PlaneEndpoint | None = None
        self._host_dirs: set[Path] = set()
        no_namespaces = namespace_support(self.root / "namespace-check")
        if no_namespaces is not None:
            log.warning(
                "real-ray: containers get no mount namespace here (%s): pods whose containers "
                "mount volumes are refused",
                no_namespaces,
            )
        self.ctx = RunnerContext(
            ray=self.ray,
            shim=self.shim,
            plane_id=self.plane_id,
            claims=self.root / "claims",
            logs=logs,
            lookup=self._lookup,
            resolve=self.resolve_service,
            mounts_behind=self._mounts_behind,
            event=self._event,
            backoff=backoff,
            no_namespaces=no_namespaces,
            writable=(str(self.root), "/tmp"),
            endpoint=lambda: self.endpoint,
            host_dir_created=self._host_dirs.add,
        )

    # -- the kubelet's side ------------------------------------------------------------------

    def allocate_ip(self) -> str:
        """Returns a fresh loopback pod IP."""
        return self.addresses.allocate()

    async def run(self, pod: Obj, write: Write) -> None:
        """Runs the pod (already bound, with its pod IP) until it ends; cancel to abandon it."""
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        self._count += 1
        runner = PodRunner(self.ctx, pod, self.root / str(self._count), write)
        self._runners[uid] = runner
        try:
            await runner.run()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("real-ray: pod %s/%s failed", runner.namespace, runner.name)

    async def stop_pod(self, uid: str, grace: float | None) -> None:
        """Ends the pod's processes (SIGTERM, SIGKILL after ``grace``) and drops its files."""
        runner = self._runners.pop(uid, None)
        if runner is not None:
            await runner.stop(grace)

    async def close(self) -> None:
        """Ends every process this plane started and removes its directory."""
        runners, self._runners = list(self._runners.values()), {}
        await asyncio.gather(*(r.stop(2.0) for r in runners), return_exceptions=True)
        await kill_tree(f"{PLANE_ENV}={self.plane_id}", session=None, grace=2.0)
        shutil.rmtree(self.root, ignore_errors=True)
        for directory in self._host_dirs:
            _remove_empty_tree(directory)
        self._host_dirs.clear()

    # -- ContainerExecutor ----------------------------------------------------------------------

    def process_env(self, pod: Mapping[str, Any], container: str) -> ContainerProcessEnv | None:
        """Returns the running container's process environment, or None when it is not running."""
        runner = self._runners.get(str((pod.get("metadata") or {}).get("uid") or ""))
        return None if runner is None else runner.process_env(container)

    # -- Services ------------------------------------------------------------------------------

    def _service(self, namespace: str, name: str) -> Obj | None:
        info = self.store.resources.get("", "v1", "services")
        return None if info is None else self.store.peek(info, namespace, name)

    def _pods_behind(self, namespace: str, service: Obj) -> list[Obj]:
        selector = (service.get("spec") or {}).get("selector")
        info = self.store.resources.get("", "v1", "pods")
        if not selector or info is None:
            return []
        sel = label_selector_from_dict(selector)
        pods, _ = self.store.list(info, namespace, label_selector=sel, copy=False)
        alive = [
            p
            for p in pods
            if (p.get("status") or {}).get("podIP")
            and not (p.get("metadata") or {}).get("deletionTimestamp")
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]
        return sorted(alive, key=lambda p: not condition_true(p, "Ready"))

    def resolve_service(self, namespace: str, name: str) -> str | None:
        """Returns the IP of a pod behind the Service (a ready one first), or None."""
        svc = self._service(namespace, name)
        pods = [] if svc is None else self._pods_behind(namespace, svc)
        return str(pods[0]["status"]["podIP"]) if pods else None

    def resolve_url(self, namespace: str, name: str, port: str | None) -> str | None:
        """The services-proxy resolver: ``http://<ready pod IP>:<targetPort>`` or None.

        A Service with ``publishNotReadyAddresses`` (KubeRay's head Service) serves its pods
        ready or not, as its endpoints list them
        (https://kubernetes.io/docs/reference/kubernetes-api/service-resources/service-v1/#ServiceSpec):
        a head pod whose SidecarMode submitter has exited is not Ready, and its dashboard is
        still reached.
        """
        svc = self._service(namespace, name)
        if svc is None:
            return None
        ports = (svc.get("spec") or {}).get("ports") or []
        wanted = str(port or "")
        chosen = next(
            (p for p in ports if wanted in (str(p.get("name") or ""), str(p.get("port") or ""))),
            ports[0] if ports and not wanted else None,
        )
        if chosen is None:
            return None
        publish = bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))
        serving = [
            p for p in self._pods_behind(namespace, svc) if publish or condition_true(p, "Ready")
        ]
        if not serving:
            return None
        target = chosen.get("targetPort", chosen.get("port"))
        if isinstance(target, str) and not target.isdigit():
            target = _named_port(serving[0], target)
            if target is None:
                return None
        return f"http://{serving[0]['status']['podIP']}:{target}"

    def resolve_pod_url(self, namespace: str, pod: str, port: str | None) -> str | None:
        """The pods-proxy resolver: ``http://<pod IP>:<port>`` of a running pod, or None."""
        info = self.store.resources.get("", "v1", "pods")
        found = None if info is None else self.store.peek(info, namespace, pod)
        ip = ((found or {}).get("status") or {}).get("podIP")
        if not ip or not port:
            return None
        number = port if port.isdigit() else _named_port(found or {}, port)
        return None if number is None else f"http://{ip}:{number}"

    def _mounts_behind(self, namespace: str, service: str) -> Mapping[str, str]:
        svc = self._service(namespace, service)
        for pod in [] if svc is None else self._pods_behind(namespace, svc):
            runner = self._runners.get(str(pod["metadata"].get("uid")))
            if runner is not None and runner.specs:
                env = runner.process_env(str(runner.specs[0].get("name")))
                if env is not None:
                    return env.mounts
        return {}

    # -- objects and events -----------------------------------------------------------------------

    def _lookup(self, namespace: str) -> Lookup:
        def find(kind: str, name: str) -> Obj | None:
            plural = {
                "ConfigMap": "configmaps",
                "Secret": "secrets",
                "ServiceAccount": "serviceaccounts",
            }[kind]
            info = self.store.resources.get("", "v1", plural)
            return None if info is None else self.store.peek(info, namespace, name)

        return find

    async def _event(self, pod: Obj, kind: str, reason: str, message: str) -> None:
        events = self.store.resources.get("", "v1", "events")
        if events is None:
            return
        md = pod.get("metadata") or {}
        stamp = now_rfc3339()
        event: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{md.get('name')}.{time.time_ns():x}",
                "namespace": md.get("namespace"),
            },
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "namespace": md.get("namespace"),
                "name": md.get("name"),
                "uid": md.get("uid"),
            },
            "reason": reason,
            "message": message,
            "type": kind,
            "source": {"component": "kubelet", "host": (pod.get("spec") or {}).get("nodeName")},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "reportingComponent": "kubelet",
            "reportingInstance": str((pod.get("spec") or {}).get("nodeName") or ""),
        }
        with contextlib.suppress(Exception):
            await self.store.create(events, str(md.get("namespace") or ""), event)


def _named_port(pod: Obj, name: str) -> int | None:
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == name:
                return int(port.get("containerPort") or 0)
    return None


def _remove_empty_tree(path: Path) -> None:
    """Removes the mount points under ``path`` (empty directories and files), then ``path``."""
    if path.is_symlink() or not path.exists():
        return
    if path.is_file():
        if path.stat().st_size == 0:
            path.unlink()
        return
    for child in path.iterdir():
        _remove_empty_tree(child)
    with contextlib.suppress(OSError):
        path.rmdir()
