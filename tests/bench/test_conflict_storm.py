"""conflict-storm sends the same edits for the same seed, however the run's timing falls."""

from __future__ import annotations

import asyncio
import copy
import random
from typing import Any, cast

import pytest

from rayop.bench.readiness import ReadinessTracker
from rayop.bench.scenarios import ConflictStormScenario, ScenarioContext, ScenarioSpec
from rayop.kube.client import KubeClient
from rayop.kube.errors import Conflict
from rayop.kube.resource import Resource


class SlowServer:
    """Answers the scenario's creates, gets and updates after random (virtual) delays, with
    optimistic concurrency; records every update it accepted."""

    def __init__(self, delays: random.Random) -> None:
        self._delays = delays
        self._objects: dict[str, dict[str, Any]] = {}
        self._rv = 0
        self.accepted: list[tuple[str, str]] = []

    async def _pause(self) -> None:
        await asyncio.sleep(self._delays.uniform(0.0, 0.2))

    def _commit(self, obj: dict[str, Any]) -> dict[str, Any]:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        obj["metadata"].setdefault("generation", 1)
        self._objects[obj["metadata"]["name"]] = obj
        return copy.deepcopy(obj)

    async def create(self, _res: Resource, obj: dict[str, Any], **_: Any) -> dict[str, Any]:
        await self._pause()
        return self._commit({**copy.deepcopy(obj), "metadata": {**obj["metadata"]}})

    async def get(self, _res: Resource, name: str, **_: Any) -> dict[str, Any]:
        await self._pause()
        return copy.deepcopy(self._objects[name])

    async def update(self, _res: Resource, obj: dict[str, Any], **_: Any) -> dict[str, Any]:
        await self._pause()
        name = obj["metadata"]["name"]
        if obj["metadata"]["resourceVersion"] != self._objects[name]["metadata"]["resourceVersion"]:
            raise Conflict({"code": 409, "reason": "Conflict", "message": "modified"})
        self.accepted.append((name, obj["metadata"]["annotations"]["bench/touched"]))
        return self._commit(obj)

    def replicas(self) -> dict[str, int]:
        return {n: o["spec"]["workerGroupSpecs"][0]["replicas"] for n, o in self._objects.items()}


async def storm(delay_seed: int) -> tuple[list[tuple[str, str]], dict[str, int]]:
    server = SlowServer(random.Random(delay_seed))
    client = cast(KubeClient, server)
    ctx = ScenarioContext(client, "ns", ReadinessTracker(client, "ns"), random.Random(0))
    spec = ScenarioSpec(kind="conflict-storm", clusters=4, workers=1, edit_window=0.1)
    await ConflictStormScenario(spec).run(ctx)
    return sorted(server.accepted), server.replicas()


@pytest.mark.looptime
async def test_the_same_seed_sends_the_same_edits_whatever_the_timing() -> None:
    (edits, replicas), (edits_again, replicas_again) = await storm(1), await storm(2)
    assert len(edits) == 12  # 4 clusters x 3 edits, each applied once in the end
    assert edits == edits_again
    assert replicas == replicas_again
