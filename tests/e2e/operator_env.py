"""The shape every end-to-end environment shares: a plane from the test kit and an operator on it.

:class:`E2eEnv` pairs a :class:`~rayop.testing.PlaneUnderTest` with a (restartable) operator from
:func:`~rayop.testing.open_operator`; :func:`open_env` starts both and stops both. The per-kind
environments (``raycluster_env``, ``rayjob_env``, ``rayservice_env``) add their own views.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.resource import Resource
from rayop.runtime.manager import Manager
from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.testing import PlaneUnderTest, RunningOperator, open_control_plane, open_operator

Obj = dict[str, Any]
Env = TypeVar("Env", bound="E2eEnv")


@dataclass
class E2eEnv:
    """A running plane, its user client, and the operator under test (stoppable, restartable).

    Attributes:
        plane: The kit's plane (store views, user actions).
        operator_options: The keyword arguments of ``open_operator`` for every start.
        running: The operator while it runs, else None.
    """

    plane: PlaneUnderTest
    operator_options: Mapping[str, Any] = field(default_factory=dict)
    running: RunningOperator | None = None
    _stack: contextlib.AsyncExitStack | None = None

    @property
    def cp(self) -> EmbeddedControlPlane:
        """The embedded control plane (faults, audit, dashboards)."""
        return self.plane.cp

    @property
    def client(self) -> KubeClient:
        """The user's client."""
        return self.plane.client

    @property
    def config(self) -> KubeConfig:
        """A client configuration for the plane."""
        return self.plane.config

    @property
    def manager(self) -> Manager[KubeClient]:
        """The running operator's manager."""
        assert self.running is not None, "the operator is not running"
        return self.running.manager

    # -- operator lifecycle ------------------------------------------------------------------

    async def start_operator(self) -> None:
        """Starts a fresh operator (a new manager, as after a restart); returns once ready."""
        assert self._stack is None, "the operator is already running"
        stack = contextlib.AsyncExitStack()
        self.running = await stack.enter_async_context(
            open_operator(self.plane, **self.operator_options)
        )
        self._stack = stack

    async def stop_operator(self) -> None:
        """Stops the operator gracefully (as SIGTERM would) and closes its client."""
        stack, self._stack, self.running = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    # -- store views and user actions (the kit's) --------------------------------------------

    def stored(self, resource: Resource, namespace: str, name: str) -> Obj | None:
        """Returns the stored object, or None."""
        return self.plane.stored(resource, namespace, name)

    def objects(self, resource: Resource, namespace: str) -> list[Obj]:
        """Returns the stored objects of a kind in a namespace."""
        return self.plane.objects(resource, namespace)

    def events(self, namespace: str, reason: str | None = None) -> list[Obj]:
        """Returns the stored Events of a namespace in events.k8s.io form."""
        return self.plane.events(namespace, reason)

    async def namespace(self, name: str) -> str:
        """Creates a namespace (once) and returns its name."""
        return await self.plane.namespace(name)


@contextlib.asynccontextmanager
async def open_env(
    env_type: type[Env], *, plane: Mapping[str, Any], operator: Mapping[str, Any]
) -> AsyncIterator[Env]:
    """Starts a plane (``open_control_plane(**plane)``) and an operator on it
    (``open_operator(plane, **operator)``); stops both when the block exits."""
    async with open_control_plane(**plane) as running_plane:
        env = env_type(running_plane, operator)
        await env.start_operator()
        try:
            yield env
        finally:
            await env.stop_operator()
