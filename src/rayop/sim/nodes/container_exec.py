"""The seam between a kubelet that runs real processes and ``pods/exec``/``pods/portforward``.

The simulated kubelet runs nothing, so ``pods/exec`` has nothing to enter. A kubelet that runs
each container as a local process (``rayop up --real-ray``) knows, for every running container,
the environment a process started "inside" it must see: the container's env, its working
directory, where its volume mounts were materialized on this machine, and the pod's own
loopback address. It publishes that knowledge through :class:`ContainerExecutor`; the API
server's streaming handlers start the exec'd process (or dial the forwarded port) with it.

The application finds the executor under :data:`CONTAINER_EXECUTOR_KEY`; when none is set,
the streaming subresources answer 501 as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

__all__ = ["CONTAINER_EXECUTOR_KEY", "ContainerExecutor", "ContainerProcessEnv"]


@dataclass(frozen=True)
class ContainerProcessEnv:
    """What a process started inside one running container sees.

    Attributes:
        env: The full environment (the container's env, resolved, plus what the kubelet injects).
        cwd: The working directory on this machine (the container's ``workingDir``, remapped).
        pod_ip: The pod's loopback address; ``pods/portforward`` dials ports on it.
        mounts: Each volume mount's path inside the container -> its directory on this machine.
    """

    env: Mapping[str, str]
    cwd: str
    pod_ip: str
    mounts: Mapping[str, str]

    def host_path(self, path: str) -> str:
        """Maps an absolute path inside the container to this machine (the longest mount wins)."""
        best_root, best_host = "", ""
        for inside, host in self.mounts.items():
            root = inside.rstrip("/")
            if (path == root or path.startswith(root + "/")) and len(root) > len(best_root):
                best_root, best_host = root, host.rstrip("/")
        if not best_root:
            return path
        return best_host + path[len(best_root) :]

    def argv(self, command: Sequence[str]) -> list[str]:
        """Rewrites the absolute in-container paths of ``command`` to paths on this machine."""
        return [self.host_path(arg) if arg.startswith("/") else arg for arg in command]


class ContainerExecutor(Protocol):
    """Answers where and how a process runs inside a pod's container."""

    def process_env(self, pod: Mapping[str, Any], container: str) -> ContainerProcessEnv | None:
        """Returns the running container's process environment, or None when it is not running."""
        ...


CONTAINER_EXECUTOR_KEY: web.AppKey[ContainerExecutor] = web.AppKey(
    "rayop_sim_container_executor", ContainerExecutor
)
"""Where the API server application finds the kubelet's executor (set by ``--real-ray``)."""
