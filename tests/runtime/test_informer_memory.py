"""The compact informer cache: what it hands out, paged initial lists, and the object codec."""

from __future__ import annotations

import copy
import random
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest

from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.errors import Gone
from rayop.kube.resource import Resource
from rayop.kube.resources import PODS
from rayop.runtime.informers.compact_store import ObjectCodec
from rayop.runtime.informers.indexer import Obj
from rayop.runtime.informers.shared_informer import (
    EventHandlerFuncs,
    HandlerRegistration,
    SharedInformer,
)
from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.sim.nodes.kubelet import KubeletConfig
from rayop.testing import eventually

from .informer_fakes import FakeApi, pod
from .kuberay_pods import kuberay_worker_pod


def assert_read_only(obj: Obj) -> None:
    with pytest.raises(TypeError):
        obj["metadata"]["labels"]["x"] = "y"
    with pytest.raises(TypeError):
        obj["spec"]["containers"].append({})
    with pytest.raises(TypeError):
        obj["status"]["phase"] = "Unknown"
    with pytest.raises(TypeError):
        obj["spec"]["containers"][0]["env"][0]["value"] = "x"


def worker(i: int, namespace: str = "default") -> dict[str, Any]:
    obj = kuberay_worker_pod(f"c{i // 10}", i, namespace=namespace)
    del obj["metadata"]["ownerReferences"]
    return obj


async def test_reads_equal_the_server_state_and_are_read_only_also_after_modified() -> None:
    api = FakeApi()
    for i in range(40):
        api.put(worker(i))
    # A one-entry decoded-object cache: nearly every read below decodes from the compact store.
    informer = SharedInformer(api, PODS, decoded_cache_size=1)
    updates: list[tuple[Obj, Obj]] = []
    informer.add_event_handler(EventHandlerFuncs(update=lambda o, n: updates.append((o, n))))
    informer.start()
    try:
        assert await informer.wait_for_sync(5)
        for key, server_obj in api.objects.items():
            namespace, name = key.split("/")
            cached = informer.get(namespace, name)
            assert cached == server_obj
            assert_read_only(cached)

        name = worker(7)["metadata"]["name"]
        before = copy.deepcopy(api.objects[f"default/{name}"])
        changed = copy.deepcopy(before)
        changed["metadata"]["labels"]["ray.io/cluster"] = "moved"
        changed["status"]["phase"] = "Failed"
        changed["status"]["conditions"][0]["status"] = "False"
        after = api.put(changed)
        await eventually(lambda: len(updates) == 1)
        old, new = updates[0]
        assert old == before and new == after
        assert informer.get("default", name) == after == api.objects[f"default/{name}"]
        informer.get("default", worker(8)["metadata"]["name"])  # push it out of the decoded cache
        again = informer.get("default", name)
        assert again == after
        assert_read_only(again)
        assert_read_only(new)
        # Selectors see the new labels; lists decode equal objects too.
        assert [
            o["metadata"]["name"] for o in informer.list(label_selector={"ray.io/cluster": "moved"})
        ] == [name]
        assert sorted(informer.list("default"), key=lambda o: o["metadata"]["name"]) == [
            api.objects[k] for k in sorted(api.objects)
        ]
        # A deep copy is an ordinary mutable dict, as before.
        mine = copy.deepcopy(again)
        mine["metadata"]["labels"]["x"] = "y"
        assert type(mine["metadata"]["labels"]) is dict
    finally:
        await informer.stop()


class PagedFakeApi(FakeApi):
    """FakeApi with ``list_pages``; can expire the continue token after the first page."""

    def __init__(self) -> None:
        super().__init__()
        self.pages_served = 0
        self.expire_after_first_page = False
        self.between_pages: Callable[[], None] = lambda: None

    async def list_pages(
        self, res: Resource, *, limit: int | None = 500, **kwargs: Any
    ) -> AsyncIterator[dict[str, Any]]:
        full = await self.list(res, limit=limit, **kwargs)
        items, rv = full["items"], full["metadata"]["resourceVersion"]
        size = limit or len(items) or 1
        for start in range(0, max(1, len(items)), size):
            if start and self.expire_after_first_page:
                raise Gone({"code": 410, "reason": "Expired", "message": "continue token expired"})
            self.pages_served += 1
            yield {"metadata": {"resourceVersion": rv}, "items": items[start : start + size]}
            self.between_pages()


async def test_the_initial_list_is_stored_page_by_page() -> None:
    api = PagedFakeApi()
    for i in range(1234):
        api.put(pod(f"p{i:04d}"))
    informer = SharedInformer(api, PODS)
    cached_between_pages: list[int] = []
    api.between_pages = lambda: cached_between_pages.append(len(informer))
    informer.start()
    try:
        assert await informer.wait_for_sync(5)
        assert api.pages_served == 3
        # Each page was in the cache before the next one was asked for.
        assert cached_between_pages == [500, 1000, 1234]
        assert len(informer) == 1234
        assert informer.get("default", "p0999") == api.objects["default/p0999"]
    finally:
        await informer.stop()


async def test_an_expired_continue_token_relists_whole_and_drops_deleted_objects() -> None:
    api = PagedFakeApi()
    for i in range(600):
        api.put(pod(f"p{i:04d}"))
    api.expire_after_first_page = True
    deletes: list[str] = []
    adds: list[str] = []
    informer = SharedInformer(api, PODS)
    informer.add_event_handler(
        EventHandlerFuncs(
            add=lambda o, i: adds.append(o["metadata"]["name"]),
            delete=lambda o: deletes.append(o["metadata"]["name"]),
        )
    )

    # p0001 was on the first page, then deleted before the list was retried.
    def delete_p0001() -> None:
        api.objects.pop("default/p0001", None)

    api.between_pages = delete_p0001
    informer.start()
    try:
        assert await informer.wait_for_sync(5)
        assert api.list_calls[-1]["limit"] == 0  # the retry asked for everything at once
        assert len(informer) == 599
        assert informer.get("default", "p0001") is None
        assert deletes == ["p0001"]
        assert len(adds) == 600
    finally:
        await informer.stop()


async def test_paged_list_from_the_embedded_control_plane_then_modified() -> None:
    async with EmbeddedControlPlane(kubelet=KubeletConfig(pending_delay=3600.0)) as cp:
        info = cp.store.resources.get("", "v1", "pods")
        assert info is not None
        for i in range(1100):
            await cp.store.create(info, "default", worker(i), copy=False)
        async with KubeClient(KubeConfig.for_server(cp.url, token=cp.token), qps=-1) as client:
            pages = [len(p["items"]) async for p in client.list_pages(PODS, namespace="default")]
            assert pages == [500, 500, 100]
            informer = SharedInformer(client, PODS, decoded_cache_size=4)
            informer.start()
            try:
                assert await informer.wait_for_sync(30)
                assert cp.audit.count(verb="list", resource="pods") == 6  # 3 pages, twice
                name = worker(3)["metadata"]["name"]
                assert informer.get("default", name) == await client.get(
                    PODS, name, namespace="default"
                )
                live = copy.deepcopy(await cp.store.get(info, "default", name))
                live["metadata"]["labels"]["extra"] = "1"
                updated = await cp.store.update(info, "default", name, live)
                rv = updated["metadata"]["resourceVersion"]
                await eventually(
                    lambda: (
                        (informer.get("default", name) or {})
                        .get("metadata", {})
                        .get("resourceVersion")
                        == rv
                    )
                )
                cached = informer.get("default", name)
                assert cached == await client.get(PODS, name, namespace="default")
                assert_read_only(cached)
            finally:
                await informer.stop()


def test_codec_round_trips_and_learns_a_dictionary_per_shape() -> None:
    codec = ObjectCodec()
    workers = [worker(i) for i in range(50)]
    blobs = [codec.encode(o) for o in workers]
    assert codec.generations == 1
    assert max(len(b) for b in blobs[1:]) < 400  # a ~6 KB pod, compared with the first one
    rng = random.Random(1)
    odd = {
        "kind": "Other",
        "data": {f"k{i}": f"é☃{rng.getrandbits(64):x}" for i in range(300)},
        "n": [1.5, None, True, -3],
    }
    odd_blob = codec.encode(odd)
    assert codec.generations == 2
    assert codec.decode(odd_blob) == odd
    for obj, blob in zip(workers, blobs, strict=True):
        decoded = codec.decode(blob)
        assert decoded == obj
        assert orjson.loads(codec.decode_json(blob)) == obj
    with pytest.raises(TypeError):
        codec.decode(blobs[0])["kind"] = "x"


def head(cluster: str) -> dict[str, Any]:
    """A head pod of ``cluster``: the worker's shape with a head's labels, args and ports."""
    pod = worker(0)
    meta = pod["metadata"]
    meta["name"] = f"raycluster-{cluster}-head"
    meta["generateName"] = f"raycluster-{cluster}-head-"
    del meta["labels"]["ray.io/worker-group-replica-index"]
    meta["labels"]["ray.io/group"] = "headgroup"
    meta["labels"]["ray.io/identifier"] = f"raycluster-{cluster}-head"
    meta["labels"]["ray.io/node-type"] = "head"
    del pod["spec"]["initContainers"]
    container = pod["spec"]["containers"][0]
    container["name"] = "ray-head"
    container["args"] = [
        "ulimit -n 65536; ray start --head --dashboard-host=0.0.0.0 --num-cpus=1 --block "
        "--dashboard-agent-listen-port=52365 --memory=4294967296 --metrics-export-port=8080"
    ]
    container["env"] = [
        e for e in container["env"] if e["name"] not in ("FQ_RAY_IP", "RAY_IP", "RAY_ADDRESS")
    ]
    ports = (("gcs-server", 6379), ("dashboard", 8265), ("client", 10001), ("metrics", 8080))
    container["ports"] = [
        {"containerPort": port, "name": name, "protocol": "TCP"} for name, port in ports
    ]
    return pod


def test_codec_learns_from_a_later_object_when_the_first_was_a_poor_teacher() -> None:
    # The first object an informer encodes is often unlike the rest: here a head pod, then
    # many workers. Against the head alone a worker deflates to 9 % of its JSON (over 500
    # bytes); the codec must learn a worker and keep the rest near 6 % or below.
    codec = ObjectCodec()
    codec.encode(head("c0"))
    workers = [worker(i) for i in range(1, 51)]
    blobs = [codec.encode(o) for o in workers]
    assert codec.generations == 2
    assert max(len(b) for b in blobs[1:]) < 360
    assert [codec.decode(b) for b in blobs] == workers


def test_codec_learns_when_its_teachers_were_encoded_before_their_status() -> None:
    # An informer's first encodes are often of objects just created (no status yet): against
    # them a running pod deflates to about 6 % of its JSON, well above the 4 to 5 % of a pod
    # whose every field the dictionary has seen. The codec must learn a running pod.
    def created(obj: dict[str, Any]) -> dict[str, Any]:
        obj = copy.deepcopy(obj)
        del obj["status"]
        del obj["spec"]["nodeName"]
        return obj

    codec = ObjectCodec()
    codec.encode(created(head("c0")))
    codec.encode(created(worker(1)))
    running = [worker(i) for i in range(2, 60)]
    blobs = [codec.encode(o) for o in running]
    assert codec.generations == 3
    assert max(len(b) for b in blobs[1:]) < 200  # 350 to 400 bytes with the 8 % rule
    assert [codec.decode(b) for b in blobs] == running


async def test_a_handler_added_during_the_initial_list_still_gets_every_object() -> None:
    api = PagedFakeApi()
    for i in range(1234):
        api.put(pod(f"p{i:04d}"))
    informer = SharedInformer(api, PODS)
    late: list[tuple[str, bool]] = []
    registrations: list[HandlerRegistration] = []

    def register_after_first_page() -> None:
        if not registrations:
            handler = EventHandlerFuncs(add=lambda o, i: late.append((o["metadata"]["name"], i)))
            registrations.append(informer.add_event_handler(handler))
            assert not registrations[0].has_synced()

    api.between_pages = register_after_first_page
    informer.start()
    try:
        assert await informer.wait_for_sync(5)
        assert registrations[0].has_synced()
        assert sorted(late) == [(f"p{i:04d}", True) for i in range(1234)]
    finally:
        await informer.stop()
