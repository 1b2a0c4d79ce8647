"""How a controller is described once: :class:`ControllerBlueprint`, :class:`Wiring`, :class:`Wired`.

A blueprint says, declaratively, everything the assembly needs to know about one controller:
its name (the ``controller`` label of every metric), the ray.io kind whose selection starts it,
the gate it runs under, its worker policy, and ``build``, which turns the typed dependencies of
a :class:`Wiring` into a :class:`Wired` (its reconcile function, the watches that feed its
queue, the own-writes tracker that re-enqueues on catch-up). What the blueprint does not say,
it does not decide: worker counts, ``auto``, the queue kind and the clock come from
:func:`~rayop.controllers.assembly.build.build_operator`, the same for every controller.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from rayop.controllers.assembly.operator_settings import OperatorSettings
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.client import KubeClient
from rayop.runtime.clock import Clock
from rayop.runtime.controller import Controller
from rayop.runtime.events.recorder import EventRecorder
from rayop.runtime.informers.factory import InformerFactory
from rayop.runtime.manager import Manager
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.reconcile import ReconcileFunc, Request
from rayop.runtime.source import Source

Kind = Literal["RayCluster", "RayJob", "RayService", "RayCronJob"]
"""A ray.io kind; selecting it starts its controller (and the secondary controllers of it)."""


@dataclass(frozen=True, slots=True)
class Wiring:
    """The typed dependencies a blueprint builds its reconciler from.

    Attributes:
        manager: The manager the controller will run on (its parts are below, typed).
        settings: The operator's settings (flags, options, dashboard access).
    """

    manager: Manager[KubeClient]
    settings: OperatorSettings

    @property
    def client(self) -> KubeClient:
        """The operator's API client (shared by every controller)."""
        return self.manager.client

    @property
    def informers(self) -> InformerFactory:
        """The shared informers: one cache per resource, whoever asks for it."""
        return self.manager.informers

    @property
    def clock(self) -> Clock:
        """The operator's clock (queues, requeues, status timestamps, expectations)."""
        return self.manager.clock

    @property
    def options(self) -> OperatorOptions:
        """KubeRay's environment options and feature gates."""
        return self.settings.options

    def recorder(self, reporting_controller: str) -> EventRecorder:
        """Returns the event recorder that reports as ``reporting_controller``."""
        return self.manager.event_recorder(reporting_controller)

    def add_closer(self, name: str, close: Callable[[], Awaitable[None]]) -> None:
        """Has ``close`` awaited at shutdown, after every controller stopped."""
        self.manager.add_closer(name, close)


@dataclass(frozen=True, slots=True, kw_only=True)
class Wired:
    """What a blueprint's ``build`` returns.

    Attributes:
        reconcile: The reconcile function.
        sources: The watches that enqueue requests.
        own_writes: The tracker of the controller's own writes of its primary kind; an object
            whose pass waited for the cache to show such a write is enqueued once it does.
        on_controller: Called once with the built controller (e.g. to let a poller enqueue).
        forget: Drops what the reconciler remembers of one object beyond its own-writes
            tracker (scale expectations), when the object moves to another replica; an
            awaitable it returns (background work being stopped) is awaited before the move.
    """

    reconcile: ReconcileFunc
    sources: Sequence[Source]
    own_writes: OwnWrites | None = None
    on_controller: Callable[[Controller], None] | None = None
    forget: Callable[[Request], Awaitable[None] | None] | None = None


def always(_: OperatorOptions) -> bool:
    """The gate of a controller that always runs."""
    return True


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerBlueprint:
    """One controller, described once.

    Attributes:
        name: The controller's name: the ``controller`` label of its metrics, its queue's name.
        kind: The ray.io kind whose selection starts it.
        build: Builds its reconciler and watches from the typed dependencies; never blocks.
        gate: Whether ``rayop run`` starts it, from the options (feature gates, what the API
            server serves).
        secondary: Started beside the primary controller of ``kind`` and only with its gate on,
            even when ``kind`` is asked for by name (KubeRay's NetworkPolicy and mTLS
            controllers); a primary controller asked for by name starts whatever its gate says.
        fixed_workers: KubeRay's own worker count for this controller, where it does not take
            ``--reconcile-concurrency`` (None: it takes the flag). Under ``auto`` every
            controller adapts, this one included.
    """

    name: str
    kind: Kind
    build: Callable[[Wiring], Wired]
    gate: Callable[[OperatorOptions], bool] = always
    secondary: bool = False
    fixed_workers: int | None = None
