"""The recording client keeps every write; withholding, it sends none and answers as the server
would; its overlay stands in for the server's objects in GET and LIST."""

from __future__ import annotations

from rayop.kube.resources import CONFIGMAPS
from rayop.preview.recording_client import PREVIEW_UID, RecordingClient, overlay_key
from rayop.testing import open_control_plane


def _configmap(name: str, value: str = "1") -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "ns"}, "data": {"k": value}}


async def test_withheld_writes_are_recorded_answered_and_never_sent() -> None:
    async with open_control_plane() as plane:
        await plane.namespace("ns")
        live = await plane.client.create(CONFIGMAPS, _configmap("live"))
        writes_before = len(plane.cp.audit.writes)
        async with RecordingClient(plane.config, send=False) as client:
            made = await client.create(
                CONFIGMAPS, {"metadata": {"generateName": "g-", "namespace": "ns"}}
            )
            assert made["metadata"] == {
                "generateName": "g-",
                "name": "g-preview",
                "uid": PREVIEW_UID,
                "namespace": "ns",
            }
            changed = {**live, "data": {"k": "2"}}
            assert (await client.update(CONFIGMAPS, changed))["data"] == {"k": "2"}
            patched = await client.patch(CONFIGMAPS, "live", {"data": {"k": "3"}}, namespace="ns")
            assert patched["data"] == {"k": "1"}  # answered with the object as it is
            await client.delete(CONFIGMAPS, "live", namespace="ns")
            status, _ = await client.request(
                "POST", "/api/v1/namespaces/ns/services/x:8265/proxy/api/jobs/", json={}
            )
            assert status == 200
            assert [str(w) for w in client.writes] == [
                "create ConfigMap ns/g-*",
                "update ConfigMap ns/live",
                "patch ConfigMap ns/live",
                "delete ConfigMap ns/live",
                "POST /api/v1/namespaces/ns/services/x:8265/proxy/api/jobs/",
            ]
        assert len(plane.cp.audit.writes) == writes_before
        stored = plane.stored(CONFIGMAPS, "ns", "live")
        assert stored is not None and stored["data"] == {"k": "1"}


async def test_sent_writes_are_recorded_and_reach_the_server() -> None:
    async with open_control_plane() as plane:
        await plane.namespace("ns")
        async with RecordingClient(plane.config, send=True) as client:
            await client.create(CONFIGMAPS, _configmap("sent"))
        assert [w.verb for w in client.writes] == ["create"]
        assert plane.stored(CONFIGMAPS, "ns", "sent") is not None


async def test_the_overlay_stands_in_for_the_servers_objects() -> None:
    async with open_control_plane() as plane:
        await plane.namespace("ns")
        await plane.client.create(CONFIGMAPS, _configmap("a"))
        await plane.client.create(CONFIGMAPS, _configmap("b"))
        overlay = {
            overlay_key("ConfigMap", "ns", "a"): {"kind": "ConfigMap", **_configmap("a", "edited")},
            overlay_key("ConfigMap", "ns", "new"): {"kind": "ConfigMap", **_configmap("new")},
        }
        async with RecordingClient(plane.config, send=False, overlay=overlay) as client:
            assert (await client.get(CONFIGMAPS, "a", namespace="ns"))["data"] == {"k": "edited"}
            listed = (await client.list(CONFIGMAPS, namespace="ns"))["items"]
            paged = [
                i
                async for page in client.list_pages(CONFIGMAPS, namespace="ns", limit=1)
                for i in page["items"]
            ]
            elsewhere = (await client.list(CONFIGMAPS, namespace="other"))["items"]
        for items in (listed, paged):
            assert {i["metadata"]["name"]: i["data"]["k"] for i in items} == {
                "a": "edited",
                "b": "1",
                "new": "1",
            }
        assert elsewhere == []
