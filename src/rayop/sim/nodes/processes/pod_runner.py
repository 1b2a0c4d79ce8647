"""Drives one pod of ``--real-ray`` from its volumes to its end, with its processes.

The runner materializes the pod's volumes, runs the init containers one after the other, then
starts every container (:mod:`.container_process`), runs their probes (:mod:`.probes`), and
turns exit codes into restarts per ``restartPolicy`` (the container's own, else the pod's;
back-off 10 s doubling to 300 s, shown as ``CrashLoopBackOff``) and into the pod's phase. Each state change is written to the pod's
status (:mod:`.container_state`). :meth:`PodRunner.stop` ends every process of the pod
(SIGTERM, SIGKILL after the grace period). ``startupProbe`` is not run: readiness and
liveness probes start at once (after their ``initialDelaySeconds``). A container without a
command runs its image's entrypoint where :mod:`.image_entrypoint` knows it; otherwise it stays
waiting (``CreateContainerError``) with a ``FailedCreatePodContainer`` Warning naming the image.

Where the machine allows it (:func:`~.mount_namespace.namespace_support`), every container runs
in a private mount namespace of its own (:mod:`.mount_namespace`) with its volume mounts, the
pod's home at ``/home/ray``, its Ray temp dir at ``/tmp/ray`` and the service account's files
(:mod:`.service_account`) at their in-pod paths; commands and env values then keep their paths
as written (only Service names are rewritten), and exec probes and ``kubectl exec`` enter a
namespace made the same way. Where it does not, paths in commands and env values are rewritten
to this machine (:mod:`.rewrite`) and a container with volume mounts is refused
(``CreateContainerConfigError``, saying why): its processes would open paths that are not
there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rayop.apimachinery.objects import Obj
from rayop.sim.machinery.errors import StatusError
from rayop.sim.machinery.timestamps import now_rfc3339
from rayop.sim.nodes.container_exec import ContainerProcessEnv
from rayop.sim.nodes.container_logs import PodLogs
from rayop.sim.nodes.processes.container_process import ContainerProcess, kill_tree
from rayop.sim.nodes.processes.container_state import ContainerState, render
from rayop.sim.nodes.processes.image_entrypoint import (
    NoImageCommand,
    container_argv,
    image_workdir,
)
from rayop.sim.nodes.processes.image_version import version_warning
from rayop.sim.nodes.processes.loopback import POD_IP_ENV
from rayop.sim.nodes.processes.mount_namespace import MountPlan, launcher_argv
from rayop.sim.nodes.processes.pod_env import EnvError, Lookup, expand, resolve_env
from rayop.sim.nodes.processes.probes import ProbeSpec, run_probe
from rayop.sim.nodes.processes.ray_install import RayInstall
from rayop.sim.nodes.processes.rewrite import (
    ADDRESS_ENV,
    CommandRewriter,
    address_services,
    rewrite_addresses,
    service_names,
)
from rayop.sim.nodes.processes.service_account import (
    SERVICE_ACCOUNT_DIR,
    PlaneEndpoint,
    automounts,
    kube_env,
    service_account_name,
    write_token_files,
)
from rayop.sim.nodes.processes.volumes import (
    VolumeError,
    container_mounts,
    materialize_volumes,
    read_only_mounts,
)

__all__ = ["PodRunner", "RunnerContext"]

log = logging.getLogger(__name__)
Write = Callable[[Callable[[Obj], None]], Awaitable["Obj | None"]]
Event = Callable[[Obj, str, str, str], Awaitable[None]]
POD_ENV = "RAYOP_POD"
_RAY_START = re.compile(r"(?<![\w-])ray start(?![\w-])")
AGENT_REGISTER_TIMEOUT_MS = "120000"
"""``RAY_agent_register_timeout_ms`` for every container unless its env sets it."""
SERVICE_WAIT = 60.0
"""Seconds a container's start waits for the Services its command names to have a pod IP."""


@dataclass(frozen=True)
class RunnerContext:
    """What every pod runner shares: the local Ray, the shim, the plane's directories, lookups."""

    ray: RayInstall
    shim: Path
    plane_id: str
    claims: Path
    logs: PodLogs
    lookup: Callable[[str], Lookup]
    resolve: Callable[[str, str], str | None]
    mounts_behind: Callable[[str, str], Mapping[str, str]]
    event: Event
    backoff: float = 10.0
    no_namespaces: str | None = None
    """Why containers cannot get mount namespaces here (None: they do)."""
    writable: tuple[str, ...] = ()
    """Where a missing mount point may be created (the plane's directory, ``/tmp``)."""
    endpoint: Callable[[], PlaneEndpoint | None] = lambda: None
    """The plane's API server as pods reach it (None: not serving yet; no token is mounted)."""
    host_dir_created: Callable[[Path], None] = lambda _path: None
    """Told of each mount point (and missing parents) made on this machine, to remove at the end."""


@dataclass
class _Running:
    process: ContainerProcess
    env: ContainerProcessEnv
    rewriter: CommandRewriter
    wrap: Callable[[Sequence[str]], list[str]] | None = None
    started: float = field(default_factory=lambda: asyncio.get_running_loop().time())


def _wrapper(plan: MountPlan) -> Callable[[Sequence[str]], list[str]]:
    """Runs a command (an exec probe, ``kubectl exec``) in a namespace made as the container's."""
    return lambda argv: launcher_argv(plan, None, argv)


class PodRunner:
    """Runs one pod's containers (see the module docstring).

    Args:
        ctx: The shared context.
        pod: The pod as stored after its IP was assigned.
        directory: This pod's directory (volumes, home, Ray's temp dir).
        write: Applies a status change to the latest pod and writes it (None: pod gone).
    """

    def __init__(self, ctx: RunnerContext, pod: Obj, directory: Path, write: Write) -> None:
        self.ctx = ctx
        self.pod = pod
        md = pod.get("metadata") or {}
        self.uid = str(md.get("uid") or "")
        self.namespace = str(md.get("namespace") or "")
        self.name = str(md.get("name") or "")
        self.pod_ip = str((pod.get("status") or {}).get("podIP") or "")
        self.dir = directory
        self._write = write
        spec = pod.get("spec") or {}
        self.policy = str(spec.get("restartPolicy") or "Always")
        self.init_specs: list[Obj] = list(spec.get("initContainers") or [])
        self.specs: list[Obj] = list(spec.get("containers") or [])
        self.init = [
            ContainerState(str(c.get("name")), str(c.get("image") or "")) for c in self.init_specs
        ]
        self.main = [
            ContainerState(str(c.get("name")), str(c.get("image") or "")) for c in self.specs
        ]
        for state in self.init:
            state.waiting = "PodInitializing"
        self.running: dict[str, _Running] = {}
        self.volumes: dict[str, Path] = {}
        self.token_dir: Path | None = None
        self._lock = asyncio.Lock()
        self._gone = False
        self._reported: set[str] = set()
        self._last_start: dict[str, float] = {}

    # -- status ----------------------------------------------------------------------------

    async def publish(self) -> bool:
        """Writes the current states into the pod's status; False when the pod is gone."""
        if self._gone:
            return False
        async with self._lock:
            written = await self._write(lambda p: render(p, self.init, self.main, now_rfc3339()))
        if written is None:
            self._gone = True
        return written is not None

    async def _event_once(self, kind: str, reason: str, message: str) -> None:
        key = f"{reason}:{message}"
        if key not in self._reported:
            self._reported.add(key)
            await self.ctx.event(self.pod, kind, reason, message)

    # -- the pod's life --------------------------------------------------------------------

    async def run(self) -> None:
        """Runs the pod until its containers are done for good (or it is cancelled)."""
        for spec in self.init_specs + self.specs:
            warning = version_warning(
                str(spec.get("name")), str(spec.get("image") or ""), self.ctx.ray.version
            )
            if warning:
                await self._event_once("Warning", "RayVersionMismatch", warning)
        await self._mount()
        for spec, state in zip(self.init_specs, self.init, strict=True):
            if not await self._run_init(spec, state):
                return
        if not await self.publish():
            return
        await asyncio.gather(
            *(
                self._supervise(spec, state)
                for spec, state in zip(self.specs, self.main, strict=True)
            )
        )
        await self.publish()
        self.ctx.logs.close_pod(self.uid)

    async def _mount(self) -> None:
        while True:
            try:
                self.volumes = materialize_volumes(
                    self.pod, self.dir / "volumes", self.ctx.claims, self.ctx.lookup(self.namespace)
                )
                self.token_dir = self._service_account_token()
                return
            except VolumeError as exc:
                await self._event_once("Warning", "FailedMount", f"MountVolume.SetUp failed: {exc}")
                await asyncio.sleep(2.0)

    def _service_account_token(self) -> Path | None:
        """Writes the service account's files (when they are mounted); their directory or None.

        Raises:
            VolumeError: the ServiceAccount does not exist (yet).
        """
        endpoint = self.ctx.endpoint()
        account_name = service_account_name(self.pod)
        account = self.ctx.lookup(self.namespace)("ServiceAccount", account_name)
        if endpoint is None or not automounts(self.pod, account):
            return None
        try:
            token = endpoint.issue_token(self.namespace, account_name)
        except StatusError as exc:
            raise VolumeError(
                f'serviceaccount "{account_name}" not found: the token cannot be mounted'
            ) from exc
        directory = self.dir / "volumes" / "kube-api-access"
        write_token_files(directory, token, endpoint.ca_data, self.namespace)
        return directory

    async def _run_init(self, spec: Obj, state: ContainerState) -> bool:
        backoff = self.ctx.backoff
        while True:
            code = await self._run_once(spec, state)
            if code is None:
                return False
            if code == 0:
                return True
            if self.policy == "Never":
                await self.publish()
                return False
            state.restarting("CrashLoopBackOff", self._backoff_message(spec))
            if not await self.publish():
                return False
            await asyncio.sleep(backoff)
            backoff = min(300.0, backoff * 2)

    async def _supervise(self, spec: Obj, state: ContainerState) -> None:
        # A container's own restartPolicy overrides the pod's (container restart rules, beta
        # since Kubernetes 1.35: https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#container-restart-rules);
        # KubeRay gives the SidecarSubmitterRestart submitter OnFailure in a Never pod.
        policy = str(spec.get("restartPolicy") or self.policy)
        backoff = self.ctx.backoff
        while True:
            code = await self._run_once(spec, state)
            if code is None:
                return
            if policy == "Never" or (policy == "OnFailure" and code == 0):
                await self.publish()
                return
            ran = asyncio.get_running_loop().time() - self._last_start.get(state.name, 0.0)
            if ran > 600:
                backoff = self.ctx.backoff
            state.restarting("CrashLoopBackOff", self._backoff_message(spec))
            if not await self.publish():
                return
            await asyncio.sleep(backoff)
            backoff = min(300.0, backoff * 2)

    def _backoff_message(self, spec: Obj) -> str:
        return (
            f"back-off restarting failed container {spec.get('name')} in pod "
            f"{self.name}_{self.namespace}({self.uid})"
        )

    async def _run_once(self, spec: Obj, state: ContainerState) -> int | None:
        """Starts the container, waits for its exit and records it; None when the pod is gone."""
        name = str(spec.get("name"))
        sink = self.ctx.logs.open(self.uid, name, state.restarts)
        try:
            running = await self._prepare(spec, sink)
        except NoImageCommand as exc:
            # The spec cannot change, so retrying would not help: the container stays waiting.
            sink.close()
            state.waiting, state.waiting_message = "CreateContainerError", str(exc)
            await self._event_once("Warning", "FailedCreatePodContainer", f"Error: {exc}")
            await self.publish()
            return None
        except EnvError as exc:
            state.waiting, state.waiting_message = "CreateContainerConfigError", str(exc)
            await self._event_once("Warning", "Failed", f"Error: {exc}")
            if not await self.publish():
                return None
            await asyncio.sleep(2.0)
            return await self._run_once(spec, state)
        try:
            await running.process.start()
        except OSError as exc:
            now = now_rfc3339()
            message = f'exec: "{running.process.argv[0]}": {exc.strerror or exc}'
            sink.write(message)
            sink.close()
            state.running(now, f"rayop://{uuid.uuid4().hex}")
            state.ended(128, now, reason="StartError", message=message)
            await self._event_once(
                "Warning", "Failed", f"Error: failed to start container: {message}"
            )
            return None if not await self.publish() else 128
        self.running[name] = running
        self._last_start[name] = asyncio.get_running_loop().time()
        state.running(now_rfc3339(), f"rayop://{uuid.uuid4().hex}")
        state.ready = "readinessProbe" not in spec  # startupProbe: not run (see the docstring)
        probes = [
            asyncio.create_task(self._probe(spec, state, running, kind))
            for kind in ("readinessProbe", "livenessProbe")
            if kind in spec
        ]
        try:
            if not await self.publish():
                return None  # the pod is gone: stop() ends the process
            code = await running.process.wait()
        finally:
            for task in probes:
                task.cancel()
        self.running.pop(name, None)
        sink.close()
        signalled = code < 0
        state.ended(128 - code if signalled else code, now_rfc3339())
        return state.exit_code

    async def _prepare(self, spec: Obj, sink: Any) -> _Running:
        lookup = self.ctx.lookup(self.namespace)
        own_env = resolve_env(self.pod, spec, lookup)
        command = [str(a) for a in spec.get("command") or []]
        args = [str(a) for a in spec.get("args") or []]
        argv = [
            expand(a, own_env) for a in container_argv(str(spec.get("image") or ""), command, args)
        ]
        text = " ".join(argv + list(own_env.values()))
        names = service_names(text)
        addresses = {k: v for k, v in own_env.items() if k in ADDRESS_ENV}
        for value in addresses.values():
            names += address_services(value, self.namespace)
        await self._wait_for_services(names)
        isolated = self.ctx.no_namespaces is None
        mounts: dict[str, str] = {}
        if not isolated:
            if spec.get("volumeMounts"):
                raise EnvError(
                    f"container {spec.get('name')} mounts volumes at in-pod paths, which "
                    "--real-ray provides in a private mount namespace, and this machine cannot "
                    f"make one: {self.ctx.no_namespaces}"
                )
            for ns, svc in names:
                mounts.update(self.ctx.mounts_behind(ns, svc))
        home = self.dir / "home"
        (self.dir / "tmp" / "ray").mkdir(parents=True, exist_ok=True)
        home.mkdir(parents=True, exist_ok=True)
        mounts.update({"/home/ray": str(home), "/tmp/ray": str(self.dir / "tmp" / "ray")})
        if self.token_dir is not None:
            mounts[SERVICE_ACCOUNT_DIR] = str(self.token_dir)
        try:
            mounts.update(container_mounts(spec, self.volumes))
        except VolumeError as exc:
            raise EnvError(str(exc)) from exc
        workdir = image_workdir(str(spec.get("image") or ""))
        if workdir and workdir not in mounts:  # the image's own directory, empty in each pod
            image_dir = self.dir / "image" / str(spec.get("name")) / workdir.strip("/")
            await asyncio.to_thread(image_dir.mkdir, parents=True, exist_ok=True)
            mounts[workdir] = str(image_dir)
        rewriter = CommandRewriter(mounts, self.ctx.resolve)
        # In a mount namespace the paths are where the command expects them: names only.
        command_rewriter = CommandRewriter({}, self.ctx.resolve) if isolated else rewriter
        argv = [self._ray_start(a) for a in command_rewriter.argv(argv)]
        env = {
            k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL", "TERM", "USER", "SHELL")
        }
        env.update(
            PATH=f"{self.ctx.ray.bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            HOME=str(home),
            HOSTNAME=self.name,
            RAY_TMPDIR=str(self.dir / "tmp"),
            RAY_USAGE_STATS_ENABLED="0",
            LD_PRELOAD=str(self.ctx.shim),
            # Every pod's processes share this machine's cores: a raylet gives its Python agents
            # about 15 s to write their ports, which a restarted head on a busy machine missed
            # ("Timed out waiting for file .../metrics_agent_port_..."). The pod's env may set it.
            RAY_agent_register_timeout_ms=AGENT_REGISTER_TIMEOUT_MS,
        )
        endpoint = self.ctx.endpoint()
        if endpoint is not None:
            env.update(kube_env(endpoint))
        env.update(command_rewriter.env(own_env))
        for key in addresses:
            env[key] = rewrite_addresses(env[key], self.namespace, self.ctx.resolve)
        env[POD_IP_ENV] = self.pod_ip
        env[POD_ENV] = self.uid
        working_dir = str(spec.get("workingDir") or workdir or "")
        plan: MountPlan | None = None
        if isolated:
            plan = MountPlan(
                mounts,
                read_only_mounts(spec) | {SERVICE_ACCOUNT_DIR},
                writable=self.ctx.writable,
                staging=str(self.dir / "mnt"),
                cwd=working_dir or "/home/ray",
            )
            await asyncio.to_thread(self._host_mount_points, plan)
        # In a namespace the launcher enters workingDir; it starts in the pod's home.
        cwd = rewriter.text(working_dir) if working_dir and not isolated else str(home)
        await asyncio.to_thread(Path(cwd).mkdir, parents=True, exist_ok=True)
        process = ContainerProcess(
            argv,
            env,
            cwd,
            marker=f"{self.uid}/{spec.get('name')}",
            plane=self.ctx.plane_id,
            sink=sink,
            plan=plan,
        )
        wrap = None if plan is None else _wrapper(plan)
        return _Running(
            process,
            ContainerProcessEnv(process.env, cwd, self.pod_ip, mounts, wrap=wrap),
            rewriter,
            wrap,
        )

    def _host_mount_points(self, plan: MountPlan) -> None:
        """Creates on this machine the mount points the launcher cannot make inside the
        namespace: those under ``/tmp`` (outside the plane's own directory), and those right
        under ``/`` (``/data`` of the redis image and of a claim mounted there: the launcher
        covers a missing directory with a tmpfs on its parent, and ``/`` cannot be covered).
        The runtime removes them at its end."""
        own = [w for w in self.ctx.writable if w != "/tmp"]
        for target, source in plan.ordered():
            path = Path(target)
            top_level = path.parent == Path("/")
            under_tmp = target.startswith("/tmp/") and not any(path.is_relative_to(w) for w in own)
            if not (top_level or under_tmp):
                continue
            first_missing = next(
                (p for p in [*reversed(path.parents), path] if not p.exists()), None
            )
            if first_missing is None:
                continue
            if Path(source).is_dir():
                path.mkdir(parents=True, exist_ok=True)
            else:  # a file mounted with subPath: its mount point is an empty file
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
            self.ctx.host_dir_created(first_missing)

    def _ray_start(self, arg: str) -> str:
        """Adds this pod's ``--node-ip-address`` and ``--temp-dir`` to a ``ray start`` line.

        Without them Ray would pick the machine's address, and a worker would share the head's
        temp dir (Ray workers use the head's unless told otherwise), sockets and all.
        """
        if not _RAY_START.search(arg):
            return arg
        extra = ""
        if "--node-ip-address" not in arg:
            extra += f" --node-ip-address={self.pod_ip}"
        if "--temp-dir" not in arg:
            extra += f" --temp-dir={self.dir / 'tmp' / 'ray'}"
        return _RAY_START.sub(lambda _m: "ray start" + extra, arg, count=1)

    async def _wait_for_services(self, names: list[tuple[str, str]]) -> None:
        deadline = asyncio.get_running_loop().time() + SERVICE_WAIT
        for ns, svc in names:
            while (
                self.ctx.resolve(ns, svc) is None and asyncio.get_running_loop().time() < deadline
            ):
                await asyncio.sleep(0.5)

    async def _probe(self, spec: Obj, state: ContainerState, running: _Running, kind: str) -> None:
        probe = spec[kind]
        timing = ProbeSpec.of(probe)
        argv = running.rewriter.argv(
            [str(a) for a in (probe.get("exec") or {}).get("command") or []]
        )
        if argv and running.wrap is not None:
            argv = running.wrap(argv)
        await asyncio.sleep(timing.initial_delay)
        successes = failures = 0
        while True:
            result = await run_probe(
                probe,
                spec,
                pod_ip=self.pod_ip,
                exec_argv=argv,
                env=running.env.env,
                cwd=running.env.cwd,
            )
            if result.ok:
                successes, failures = successes + 1, 0
            else:
                successes, failures = 0, failures + 1
            label = "Readiness" if kind == "readinessProbe" else "Liveness"
            if not result.ok:
                await self.ctx.event(
                    self.pod, "Warning", "Unhealthy", f"{label} probe failed: {result.message}"
                )
            if kind == "readinessProbe":
                ready = state.ready
                if successes >= timing.success_threshold:
                    ready = True
                elif failures >= timing.failure_threshold:
                    ready = False
                if ready != state.ready:
                    state.ready = ready
                    await self.publish()
            elif failures >= timing.failure_threshold:
                message = f"Container {spec.get('name')} failed liveness probe, will be restarted"
                await self.ctx.event(self.pod, "Normal", "Killing", message)
                await running.process.stop(self._grace())
                return
            await asyncio.sleep(timing.period)

    def _grace(self) -> float:
        spec = self.pod.get("spec") or {}
        value = spec.get("terminationGracePeriodSeconds")
        return 30.0 if value is None else float(value)

    async def stop(self, grace: float | None = None) -> None:
        """Ends every process of the pod (SIGTERM, SIGKILL after the grace period)."""
        self._gone = True
        wait = self._grace() if grace is None else grace
        await kill_tree(f"{POD_ENV}={self.uid}", session=None, grace=wait)
        for running in list(self.running.values()):
            with contextlib.suppress(Exception):
                await running.process.stop(0.0)
        self.ctx.logs.close_pod(self.uid)
        shutil.rmtree(self.dir, ignore_errors=True)

    def process_env(self, container: str) -> ContainerProcessEnv | None:
        """The running container's process environment (for ``pods/exec``), or None."""
        running = self.running.get(container)
        return None if running is None else running.env
