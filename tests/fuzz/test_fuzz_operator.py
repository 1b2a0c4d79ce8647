"""Generated ray.io objects through rayop: its validation (every object, directly) and its
controllers (every object the embedded plane admits, reconciled by the running operator).

Nothing crashes (a reconcile raises none of Python's own error types, TypeError, KeyError,
RecursionError and the like, nor a pydantic ValidationError: those are bugs, while rayop's own
error types are what a controller raises on purpose, to requeue), no reconcile hangs (each one is bounded in time), and an object rayop's validation
refuses gets a Warning event with KubeRay's reason and a message naming what is wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import example, given

from rayop.api.validation import (
    Problem,
    validate_raycluster,
    validate_rayjob,
    validate_rayservice,
)
from rayop.api.validation.raycronjob import validate_raycronjob
from rayop.kube.errors import ApiError
from rayop.runtime.events.recorder import MAX_NOTE_LENGTH
from rayop.runtime.reconcile import ReconcileFunc, Request, Result
from rayop.testing import open_control_plane, open_operator
from rayop.testing.control_plane import PlaneUnderTest

from .budget import fuzz_settings
from .objects import RESOURCES, base, fuzzed_objects

Obj = dict[str, Any]
NS = "fuzz"
VALIDATE: dict[str, Callable[[Obj], list[Problem]]] = {
    "RayCluster": validate_raycluster,
    "RayJob": validate_rayjob,
    "RayService": validate_rayservice,
    "RayCronJob": validate_raycronjob,
}
VALIDATE_SECONDS = 2.0
RECONCILE_SECONDS = 10.0
_BUG_MODULES = ("builtins", "pydantic_core._pydantic_core")


def is_crash(exc: BaseException) -> bool:
    """A Python or pydantic error type (not an I/O one): a bug, not a deliberate requeue."""
    if isinstance(exc, OSError | asyncio.CancelledError):
        return False
    return type(exc).__module__ in _BUG_MODULES


def test_rayop_validation_answers_every_generated_object_quickly_and_says_why() -> None:
    @fuzz_settings(300)
    @given(fuzzed_objects())
    def one(case: tuple[str, str, Obj]) -> None:
        kind, family, obj = case
        start = time.monotonic()
        problems = VALIDATE[kind](obj)
        assert time.monotonic() - start < VALIDATE_SECONDS
        assert all(p.message and p.reason for p in problems), problems
        if family == "valid":
            assert problems == [], problems

    one()


@dataclass
class Reconciles:
    """Every reconcile call of the running operator: what it raised and how long it took."""

    done: dict[tuple[str, str], int] = field(default_factory=dict)
    crashes: list[tuple[Request, BaseException]] = field(default_factory=list)
    slow: list[tuple[Request, float]] = field(default_factory=list)

    def __call__(self, reconcile: ReconcileFunc) -> ReconcileFunc:
        async def observed(request: Request) -> Result:
            start = time.monotonic()
            try:
                return await reconcile(request)
            except Exception as exc:  # recorded when a crash, then raised as it would be
                if is_crash(exc):
                    self.crashes.append((request, exc))
                raise
            finally:
                took = time.monotonic() - start
                if took > RECONCILE_SECONDS:
                    self.slow.append((request, took))
                key = (request.namespace, request.name)
                self.done[key] = self.done.get(key, 0) + 1

        return observed


@dataclass
class World:
    loop: asyncio.AbstractEventLoop
    plane: PlaneUnderTest
    reconciles: Reconciles

    def run(self, coro: Any, seconds: float = 30.0) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, seconds))


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    loop = asyncio.new_event_loop()
    stack = AsyncExitStack()
    reconciles = Reconciles()
    try:
        plane = loop.run_until_complete(stack.enter_async_context(open_control_plane()))
        loop.run_until_complete(
            stack.enter_async_context(
                open_operator(
                    plane,
                    controllers=("RayCluster", "RayJob", "RayService", "RayCronJob"),
                    feature_gates={"RayCronJob": True},
                    wrap_reconcile=reconciles,
                )
            )
        )
        loop.run_until_complete(plane.namespace(NS))
        yield World(loop, plane, reconciles)
    finally:
        loop.run_until_complete(stack.aclose())
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


async def _reconciled(world: World, name: str, before: int) -> None:
    while world.reconciles.done.get((NS, name), 0) <= before:
        await asyncio.sleep(0.02)


async def _warned(world: World, uid: str, reason: str) -> Obj:
    """The event of ``reason`` about the object ``uid`` (not an earlier one of the same name)."""
    while True:
        for event in world.plane.events(NS, reason):
            if event["regarding"].get("uid") == uid:
                return event
        await asyncio.sleep(0.02)


def _long_group_name() -> tuple[str, str, Obj]:
    """A RayCluster whose problem does not fit in an event note (the long run found it)."""
    obj = base("RayCluster")
    obj["spec"]["workerGroupSpecs"][0]["groupName"] = "x" * 2000
    return "RayCluster", "hostile", obj


def names_the_problem(note: str, message: str) -> bool:
    """Whether an event's note carries ``message``, whole or, when the note was cut to
    events.k8s.io/v1's 1 KiB, from its field up to the cut."""
    if message in note:
        return True
    where = message.split(":", 1)[0]
    return (
        len(note) == MAX_NOTE_LENGTH
        and where in note
        and message.startswith(note[note.index(where) :])
    )


def test_the_operator_reconciles_what_the_plane_admits_without_crashing(world: World) -> None:
    tally: dict[str, int] = {}

    @fuzz_settings(40, share=0.1)  # each example runs a reconcile or more: a tenth in a long run
    @given(fuzzed_objects())
    @example(_long_group_name())
    def one(case: tuple[str, str, Obj]) -> None:
        kind, _family, obj = case
        resource = RESOURCES[kind]
        body = json.loads(json.dumps(obj))
        try:
            created = world.run(world.plane.client.create(resource, body, namespace=NS))
        except ApiError as err:
            assert 400 <= err.code < 500, err  # refused by the API server: its test's part
            tally["refused by the plane"] = tally.get("refused by the plane", 0) + 1
            return
        except TypeError as err:  # an integer past 64 bits: no Kubernetes client sends it
            assert "64-bit" in str(err), err
            tally["not sendable"] = tally.get("not sendable", 0) + 1
            return
        name = created["metadata"]["name"]
        try:
            world.run(_reconciled(world, name, 0), RECONCILE_SECONDS * 2)
            problems = VALIDATE[kind](created)
            if problems:
                uid = created["metadata"]["uid"]
                event = world.run(_warned(world, uid, problems[0].reason), RECONCILE_SECONDS)
                assert event["type"] == "Warning"
                assert names_the_problem(event["note"], problems[0].message), (
                    event["note"],
                    problems[0],
                )
                tally["refused by rayop"] = tally.get("refused by rayop", 0) + 1
            else:
                tally["reconciled"] = tally.get("reconciled", 0) + 1
        finally:
            with contextlib.suppress(ApiError):
                world.run(world.plane.client.delete(resource, name, namespace=NS))
        assert world.reconciles.crashes == [], world.reconciles.crashes
        assert world.reconciles.slow == [], world.reconciles.slow

    one()
    print(f"operator fuzz: {tally}")
    assert world.reconciles.crashes == [], world.reconciles.crashes
