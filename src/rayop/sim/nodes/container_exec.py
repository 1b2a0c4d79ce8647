"""The seam between a kubelet that runs real processes and ``pods/exec``/``pods/portforward``.

The simulated kubelet runs nothing, so ``pods/exec`` has nothing to enter. A kubelet that runs
each container as a local process (``rayop up --real-ray``) knows, for every running container,
the environment a process started "inside" it must see: the container's env, its working
directory, where its volume mounts were materialized on this machine, and the pod's own
loopback address. It publishes that knowledge through :class:`ContainerExecutor`; the API
server's streaming handlers start the exec'd process (or dial the forwarded port) with it.

The simulated kubelet (``rayop up`` without ``--real-ray``) publishes one too
(:mod:`rayop.sim.dashboard.simulated_exec`): what its pods can honestly serve. Its
environments name the only commands an exec may run (:attr:`ContainerProcessEnv.vet`: ``tar``
over the simulated Ray log directory the mounts map) and dial a simulated head's ports
(:attr:`ContainerProcessEnv.dial`) instead of a loopback address.

The application finds the executor under :data:`CONTAINER_EXECUTOR_KEY`; when none is set,
the streaming subresources answer 501 as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

__all__ = ["CONTAINER_EXECUTOR_KEY", "ContainerExecutor", "ContainerProcessEnv", "PortDialer"]

PortDialer = Callable[[int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]
"""Opens a connection to one of the pod's ports (raises OSError as a refused dial does)."""


@dataclass(frozen=True)
class ContainerProcessEnv:
    """What a process started inside one running container sees.

    Attributes:
        env: The full environment (the container's env, resolved, plus what the kubelet injects).
        cwd: The working directory on this machine (the container's ``workingDir``, remapped).
        pod_ip: The pod's loopback address; ``pods/portforward`` dials ports on it.
        mounts: Each volume mount's path inside the container -> its directory on this machine.
        dial: Opens a connection to a pod port (None: TCP to ``pod_ip``).
        vet: Says why a command cannot run in this container, or None when it can (None:
            any command runs; a container of real processes).
        wrap: Turns the command (paths already remapped) into the one that runs it inside the
            container's mount namespace (None: it runs as it is).
    """

    env: Mapping[str, str]
    cwd: str
    pod_ip: str
    mounts: Mapping[str, str]
    dial: PortDialer | None = None
    vet: Callable[[Sequence[str]], str | None] | None = None
    wrap: Callable[[Sequence[str]], list[str]] | None = None

    async def connect(self, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Opens a connection to ``port`` of the pod (raises OSError when nothing listens)."""
        if self.dial is not None:
            return await self.dial(port)
        return await asyncio.open_connection(self.pod_ip, port)

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

    def refusal(self, command: Sequence[str]) -> str | None:
        """Returns why ``command`` cannot run in this container, or None when it can."""
        return None if self.vet is None else self.vet(command)


class ContainerExecutor(Protocol):
    """Answers where and how a process runs inside a pod's container."""

    def process_env(self, pod: Mapping[str, Any], container: str) -> ContainerProcessEnv | None:
        """Returns the running container's process environment, or None when it is not running."""
        ...


CONTAINER_EXECUTOR_KEY: web.AppKey[ContainerExecutor] = web.AppKey(
    "rayop_sim_container_executor", ContainerExecutor
)
"""Where the API server application finds the kubelet's executor (set by ``--real-ray``)."""
