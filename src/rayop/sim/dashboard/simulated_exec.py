"""What ``pods/exec`` and ``pods/portforward`` reach in a simulated pod.

The simulated kubelet runs no process, yet two things a simulated Ray pod holds are real enough
to serve: a head's dashboard, Serve and agent ports (the simulated dashboard,
:class:`~rayop.sim.dashboard.head_ports.HeadPorts`), and the Ray log directory
``/tmp/ray/session_latest/logs`` with what the simulation knows was written there: each job's
driver log, ``job-driver-<submission id>.log`` (the text ``GET /api/jobs/<id>/logs`` returns)
on the head's Ray container. :class:`SimulatedExecutor` is the simulated kubelet's
:class:`~rayop.sim.nodes.container_exec.ContainerExecutor`: for a running container it writes
that directory under a temporary root on this machine (afresh on every exec) and returns a
process environment that maps ``/tmp/ray`` there, dials the head's ports, and admits only
``tar`` reading under ``/tmp/ray`` (:func:`vet_log_archive`), the command ``kubectl ray log``
and ``kubectl cp`` run. Any other command is refused, and ``pods/exec`` answers 501 saying
what a simulated container runs.
"""

from __future__ import annotations

import functools
import shlex
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from rayop.apimachinery.objects import Obj
from rayop.sim.dashboard.head_ports import HeadPorts
from rayop.sim.dashboard.registry import DashboardRegistry, container_env
from rayop.sim.nodes.container_exec import ContainerProcessEnv
from rayop.sim.storage.controller_base import meta
from rayop.sim.storage.store import Store

__all__ = ["RAY_DIR", "SESSION_LOGS", "SimulatedExecutor", "vet_log_archive"]

RAY_DIR = "/tmp/ray"
"""The only directory a simulated container has (Ray's temp root)."""

SESSION_LOGS = RAY_DIR + "/session_latest/logs"
"""Where Ray writes a node's logs (what ``kubectl ray log`` archives)."""

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""A container's PATH when its env sets none (the container runtimes' default)."""

_TAR_LONG_OPTIONS = frozenset({"--warning=no-file-changed", "--create", "--file=-"})
_TAR_SHORT_FLAGS = frozenset("cfvC")


def vet_log_archive(command: Sequence[str]) -> str | None:
    """Says why ``command`` cannot run in a simulated container, or None for ``tar`` creating an
    archive (to stdout) of paths under :data:`RAY_DIR`."""
    if not command or command[0] != "tar":
        return (
            f"the simulated container runs no {shlex.join(command)!r}; only `tar -c` over "
            f"{RAY_DIR} (its simulated Ray logs) is served"
        )
    for arg in command[1:]:
        if arg.startswith("--") and arg not in _TAR_LONG_OPTIONS:
            return f"tar option {arg} is not simulated"
        if arg.startswith("-") and not arg.startswith("--") and set(arg[1:]) - _TAR_SHORT_FLAGS:
            return f"tar option {arg} is not simulated (only -c, -f -, -v and -C)"
        if ".." in PurePosixPath(arg).parts:
            return f"{arg} leaves {RAY_DIR}, the only simulated directory"
        if arg.startswith("/") and not (
            arg.rstrip("/") == RAY_DIR or arg.startswith(RAY_DIR + "/")
        ):
            return f"{arg} does not exist in a simulated container (only {RAY_DIR} does)"
    return None


def _running(pod: Obj, container: str) -> bool:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == container:
            return "running" in (status.get("state") or {})
    return False


class SimulatedExecutor:
    """The simulated kubelet's executor (see the module docstring).

    Args:
        store: The control plane's object store (for the containers' env).
        dashboards: The simulated heads (their jobs' driver logs).
        ports: The heads' port listeners port-forward dials.
    """

    def __init__(self, store: Store, dashboards: DashboardRegistry, ports: HeadPorts) -> None:
        self._store = store
        self._dashboards = dashboards
        self._ports = ports
        self._root = Path(tempfile.mkdtemp(prefix="rayop-sim-pods-"))

    def close(self) -> None:
        """Removes every directory written for an exec."""
        shutil.rmtree(self._root, ignore_errors=True)

    def process_env(self, pod_obj: Mapping[str, Any], container: str) -> ContainerProcessEnv | None:
        """The environment of a running container of ``pod``, or None when it is not running."""
        pod = dict(pod_obj)
        if not _running(pod, container):
            return None
        md = meta(pod)
        namespace, uid = str(md.get("namespace") or ""), str(md.get("uid") or "")
        base = self._root / uid / container
        ray_dir = base / RAY_DIR.lstrip("/")
        self._write_logs(pod, container, ray_dir)
        env = container_env(self._store, namespace, pod, container_name=container)
        env.setdefault("PATH", DEFAULT_PATH)
        env.setdefault("HOSTNAME", str(md.get("name") or ""))
        return ContainerProcessEnv(
            env=env,
            cwd=str(base),
            pod_ip=str((pod.get("status") or {}).get("podIP") or ""),
            mounts={RAY_DIR: str(ray_dir)},
            dial=functools.partial(self._ports.dial, namespace, uid),
            vet=vet_log_archive,
        )

    def _write_logs(self, pod: Obj, container: str, ray_dir: Path) -> None:
        shutil.rmtree(ray_dir, ignore_errors=True)
        ray_dir.mkdir(parents=True)
        md = meta(pod)
        containers = (pod.get("spec") or {}).get("containers") or [{}]
        if container != containers[0].get("name"):
            return  # a sidecar: Ray writes its logs in the Ray container
        logs = ray_dir / SESSION_LOGS.removeprefix(RAY_DIR + "/")
        logs.mkdir(parents=True)
        dash = self._dashboards.for_pod(str(md.get("namespace") or ""), str(md.get("uid") or ""))
        if dash is None:
            return
        for job in dash.jobs.jobs.values():
            text = dash.jobs.logs(job)
            if text:
                (logs / f"job-driver-{job.submission_id}.log").write_text(text)
