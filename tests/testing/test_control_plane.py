"""open_control_plane: CRDs served, user actions over HTTP, store views without API traffic."""

from __future__ import annotations

from typing import Any

from rayop.kube.resources import CONFIGMAPS, CORE_EVENTS, RAY_JOBS
from rayop.sim.apiserver.faults import Faults
from rayop.testing import install_crds, open_control_plane


def configmap(name: str, value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"v": value},
    }


async def test_crds_are_served_and_installing_them_again_keeps_them() -> None:
    async with open_control_plane() as plane:
        await install_crds(plane.client)
        assert (await plane.client.list(RAY_JOBS, namespace="default"))["items"] == []


async def test_create_makes_the_namespace_and_the_store_shows_the_object() -> None:
    async with open_control_plane(crds=False) as plane:
        await plane.create(CONFIGMAPS, configmap("cm", "1"), "kit-ns")
        await plane.create(CONFIGMAPS, configmap("other", "2"), "kit-ns")  # namespace made once
        stored = plane.stored(CONFIGMAPS, "kit-ns", "cm")
        assert stored is not None and stored["data"] == {"v": "1"}
        assert sorted(o["metadata"]["name"] for o in plane.objects(CONFIGMAPS, "kit-ns")) == [
            "cm",
            "other",
        ]
        assert plane.stored(CONFIGMAPS, "kit-ns", "absent") is None


async def test_edit_tries_again_after_a_conflict() -> None:
    async with open_control_plane(crds=False, faults=Faults(conflict_rate=0.5, seed=3)) as plane:
        await plane.create(CONFIGMAPS, configmap("cm", "1"), "default")

        def bump(obj: dict[str, Any]) -> None:
            obj["data"]["v"] = str(int(obj["data"]["v"]) + 1)

        for _ in range(5):
            await plane.edit(CONFIGMAPS, "default", "cm", bump)
        assert (plane.stored(CONFIGMAPS, "default", "cm") or {})["data"] == {"v": "6"}
        assert plane.cp.audit.count(verb="update", resource="configmaps", code=409) > 0


async def test_events_read_in_events_k8s_io_form_whatever_the_api_used() -> None:
    async with open_control_plane(crds=False) as plane:
        core = {
            "metadata": {"name": "e1"},
            "involvedObject": {"kind": "ConfigMap", "name": "cm", "namespace": "default"},
            "reason": "Tested",
            "message": "a core/v1 Event",
            "type": "Normal",
        }
        await plane.client.create(CORE_EVENTS, core, namespace="default")
        (event,) = plane.events("default", "Tested")
        assert event["regarding"]["name"] == "cm" and event["note"] == "a core/v1 Event"
        assert plane.events("default", "Other") == []
