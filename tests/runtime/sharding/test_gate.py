"""The shard gate: which passes run, the labels of what a pass creates, and the drain handshake
(no acknowledgement while a pass of the root is in flight; expectations forgotten first)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from rayop.kube.errors import Invalid
from rayop.kube.resource import Resource
from rayop.runtime.reconcile import Request, Result
from rayop.runtime.sharding.gate import Root, ShardGate, format_handover, parse_handover
from rayop.runtime.sharding.keys import ShardKeys
from rayop.runtime.sharding.pass_record import PassRecord, read_passes

THINGS = Resource("example.com", "v1", "things", "Thing")
OTHERS = Resource("example.com", "v1", "others", "Other")
KEYS = ShardKeys(
    shard="example.com/shard",
    drain="example.com/drain",
    released="example.com/released",
    root="example.com/root",
    lease="example.com/lease",
    handover="example.com/handover",
    assigned="example.com/assigned",
    lease_prefix="shard-",
)


class Patches:
    def __init__(self, fail: Exception | None = None) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.fail = fail

    async def patch(
        self, res: Resource, name: str, body: Any, *, namespace: str | None = None,
        patch_type: Any = "merge",
    ) -> dict[str, Any]:  # fmt: skip
        self.calls.append((name, body))
        if self.fail is not None:
            raise self.fail
        return {}


def thing(
    owner: str | None, *, drain: bool = False, handover: str = "", assigned: str | None = None
) -> dict[str, Any]:
    """A root labelled with ``owner``, assigned by the sharder to ``assigned`` (default: the
    owner)."""
    labels = {KEYS.shard: owner} if owner else {}
    if drain:
        labels[KEYS.drain] = "true"
    meta: dict[str, Any] = {"name": "a", "namespace": "ns", "uid": "u-1", "labels": labels}
    annotations = {KEYS.assigned: assigned or owner} if (assigned or owner) else {}
    if handover:
        annotations[KEYS.handover] = handover
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta}


class Cache:
    """What the resolver reads: the root as this replica's cache shows it."""

    def __init__(self) -> None:
        self.root: dict[str, Any] | None = thing("r0")
        self.object_cached = True

    def resolve(self, request: Request) -> Root | None:
        if not self.object_cached:
            return None
        return Root(THINGS, "ns", "a", self.root)


def new_gate(client: Patches, seen: dict[str, int] | None = None, **kw: Any) -> ShardGate:
    versions = seen or {}
    return ShardGate(
        "r0",
        KEYS,
        client,
        caught_up=lambda _ns, resource, rv: versions.get(resource, 0) >= rv,
        **kw,
    )


async def test_only_passes_of_roots_labelled_with_this_replica_run() -> None:
    cache = Cache()
    calls: list[Request] = []
    enqueued: list[Any] = []

    async def reconcile(request: Request) -> Result:
        calls.append(request)
        return Result()

    gate = new_gate(Patches())
    gated = gate.wrap("things", cache.resolve, reconcile, enqueue=enqueued.append)
    child = gate.wrap("children", cache.resolve, reconcile, enqueue=enqueued.append)
    cache.root = thing("r1")
    assert await child(Request("ns", "child")) == Result()
    cache.root = None  # the root is not cached (yet)
    assert await gated(Request("ns", "a")) == Result()
    assert calls == []
    cache.root = thing("r0")
    await gated(Request("ns", "a"))
    assert calls == [Request("ns", "a")]
    assert enqueued == [Request("ns", "child")], "a parked pass is enqueued once its root is ours"


async def test_a_pass_waits_for_the_caches_to_deliver_the_handover_versions() -> None:
    cache, seen, calls = Cache(), {"pods": 10}, []

    async def reconcile(request: Request) -> Result:
        calls.append(request)
        return Result()

    gated = new_gate(Patches(), seen).wrap("things", cache.resolve, reconcile)
    cache.root = thing("r0", handover=format_handover({"pods": 12, "services": 3}))
    assert await gated(Request("ns", "a")) == Result(requeue_after=0.2)
    seen.update(pods=12, services=3)
    await gated(Request("ns", "a"))
    assert calls == [Request("ns", "a")]
    assert parse_handover("pods=12, services=3,bad,x=y") == {"pods": 12, "services": 3}


async def test_objects_created_during_a_pass_carry_the_shard_and_root_labels() -> None:
    cache, stamps = Cache(), []
    gate = new_gate(Patches())

    async def reconcile(request: Request) -> Result:
        stamps.append(gate.stamp())
        return Result()

    await gate.wrap("things", cache.resolve, reconcile)(Request("ns", "a"))
    assert stamps == [{KEYS.shard: "r0", KEYS.root: "u-1"}]
    assert gate.stamp() == {}


async def test_a_deleted_object_gets_its_pass_but_a_released_one_does_not() -> None:
    cache, calls = Cache(), []

    async def reconcile(request: Request) -> Result:
        calls.append(request)
        return Result()

    gate = new_gate(Patches())
    gated = gate.wrap("things", cache.resolve, reconcile)
    cache.object_cached = False
    await gated(Request("ns", "deleted"))
    assert calls == [Request("ns", "deleted")]
    cache.object_cached = True
    await gated(Request("ns", "a"))
    assert await gate.release(THINGS, "ns", "a")
    cache.object_cached = False
    await gated(Request("ns", "a"))
    assert calls == [Request("ns", "deleted"), Request("ns", "a")]


async def test_passes_on_a_root_itself_leave_no_record_yet_its_release_forgets_them() -> None:
    # A replica's roots are most of what it admits: the gate keeps no per-root record of the
    # passes on a root itself (its controller's resource is the root's), only of its children's.
    cache, client = Cache(), Patches()
    forgotten: list[tuple[str, Request]] = []

    async def reconcile(request: Request) -> Result:
        return Result()

    gate = new_gate(client)
    own = gate.wrap("things", cache.resolve, reconcile, resource=THINGS,
                    forget=lambda r: forgotten.append(("things", r)))  # fmt: skip
    child = gate.wrap("children", cache.resolve, reconcile, resource=OTHERS,
                      forget=lambda r: forgotten.append(("children", r)))  # fmt: skip
    await own(Request("ns", "a"))
    assert gate._admitted == {} and gate._root_of == {}
    await child(Request("ns", "a-child"))
    assert list(gate._root_of) == [("children", Request("ns", "a-child"))]
    assert await gate.release(THINGS, "ns", "a")
    assert sorted(forgotten) == [
        ("children", Request("ns", "a-child")),
        ("things", Request("ns", "a")),
    ]
    assert gate._admitted == {} and gate._root_of == {}
    # Released: with its object gone from this replica's caches, neither key runs here.
    cache.object_cached = False
    ran: list[Request] = []

    async def record(request: Request) -> Result:
        ran.append(request)
        return Result()

    for name, key in (("things", "a"), ("children", "a-child")):
        gated = gate.wrap(name, cache.resolve, record)
        assert await gated(Request("ns", key)) == Result()
    assert ran == []
    await gate.close()


async def test_release_awaits_what_forget_stops_before_it_acknowledges(tmp_path: Any) -> None:
    # A controller's forget may stop background work of the object (the RayCluster
    # controller's pod creators): the drain is acknowledged only once that work has ended.
    cache, client = Cache(), Patches()
    stopped = asyncio.Event()

    async def stop_background_work() -> None:
        await stopped.wait()

    async def reconcile(request: Request) -> Result:
        return Result()

    gate = new_gate(client, record=PassRecord(tmp_path / "r0.jsonl"))
    gated = gate.wrap("things", cache.resolve, reconcile, forget=lambda r: stop_background_work())
    await gated(Request("ns", "a"))
    cache.root = thing("r0", drain=True)
    releasing = asyncio.create_task(gate.release(THINGS, "ns", "a"))
    await asyncio.sleep(0.05)
    assert not releasing.done() and client.calls == [], "acknowledged while work still runs"
    stopped.set()
    assert await releasing
    assert [name for name, _ in client.calls] == ["a"]
    await gate.close()


async def test_release_waits_for_the_pass_in_flight_then_forgets_and_acknowledges(
    tmp_path: Any,
) -> None:
    cache, client = Cache(), Patches()
    forgotten: list[Any] = []
    entered, leave = asyncio.Event(), asyncio.Event()

    async def reconcile(request: Request) -> Result:
        entered.set()
        await leave.wait()
        return Result()

    record = PassRecord(tmp_path / "r0.jsonl")
    gate = new_gate(client, record=record)
    gated = gate.wrap("things", cache.resolve, reconcile, forget=forgotten.append)
    running: asyncio.Future[Result] = asyncio.ensure_future(gated(Request("ns", "a")))
    await entered.wait()
    cache.root = thing("r0", drain=True)
    releasing = asyncio.create_task(gate.release(THINGS, "ns", "a"))
    await asyncio.sleep(0.05)
    assert not releasing.done() and client.calls == [], "no acknowledgement during a pass"
    assert forgotten == []
    leave.set()
    await running
    assert await releasing
    assert forgotten == [Request("ns", "a")]
    (name, ops), = client.calls
    assert name == "a"
    assert ops == [
        {"op": "test", "path": "/metadata/labels/example.com~1shard", "value": "r0"},
        {"op": "test", "path": "/metadata/annotations/example.com~1assigned", "value": "r0"},
        {"op": "remove", "path": "/metadata/labels/example.com~1drain"},
        {"op": "remove", "path": "/metadata/labels/example.com~1shard"},
        {"op": "add", "path": "/metadata/labels/example.com~1released", "value": "r0"},
    ]
    # While the cache still shows the root with the drain label, nothing of it runs.
    entered.clear()
    assert await gated(Request("ns", "a")) == Result()
    assert not entered.is_set()
    await gate.close()
    assert [p.key for p in read_passes([tmp_path / "r0.jsonl"])] == ["ns/a"]


async def test_a_root_whose_shard_label_changed_is_not_acknowledged() -> None:
    client = Patches(fail=Invalid({"code": 422, "message": "test failed"}))
    gate = new_gate(client)
    assert not await gate.release(THINGS, "ns", "a")
    assert len(client.calls) == 1


async def test_the_root_handler_releases_a_root_of_this_replica_asked_to_drain() -> None:
    client = Patches()
    gate = new_gate(client)
    handler = gate.root_handler(THINGS)
    handler.on_add(thing("r1", drain=True), False)
    handler.on_update(thing("r0"), thing("r0"))
    await asyncio.sleep(0.01)
    assert client.calls == []
    handler.on_update(thing("r0"), thing("r0", drain=True))
    for _ in range(50):
        if client.calls:
            break
        await asyncio.sleep(0.01)
    assert [name for name, _ in client.calls] == ["a"]
    await gate.close()


async def test_the_root_handler_repairs_a_label_edited_by_hand_to_name_this_replica() -> None:
    """Only the replica a hand-edited label names sees it at once (its informer selects its own
    label): its gate asks for the repair, once while one is running; a root the sharder gave it,
    or one released by another replica's drain, is left alone."""
    gate = new_gate(Patches())
    repaired: list[str] = []
    hold = asyncio.Event()

    async def repair(_resource: Resource, obj: Mapping[str, Any]) -> bool:
        repaired.append(obj["metadata"]["annotations"][KEYS.assigned])
        await hold.wait()
        return True

    handler = gate.root_handler(THINGS)
    handler.on_add(thing("r0", assigned="r1"), False)  # before set_repair: nothing to call
    gate.set_repair(repair)
    handler.on_add(thing("r0"), False)
    released = thing("r0", assigned="r1")
    released["metadata"]["labels"][KEYS.released] = "r1"
    handler.on_update(released, released)
    handler.on_add(thing("r1", assigned="r2"), False)  # another replica's root
    await asyncio.sleep(0.01)
    assert repaired == []
    handler.on_update(thing("r0"), thing("r0", assigned="r1"))
    handler.on_update(thing("r0", assigned="r1"), thing("r0", assigned="r1"))
    await asyncio.sleep(0.01)
    assert repaired == ["r1"], "one repair at a time per root"
    hold.set()
    await asyncio.sleep(0.01)
    handler.on_update(thing("r0", assigned="r1"), thing("r0", assigned="r1"))
    await asyncio.sleep(0.01)
    assert repaired == ["r1", "r1"]
    await gate.close()


@pytest.mark.parametrize("owners", [(), ("a",), ("a", "b")])
def test_selectors(owners: tuple[str, ...]) -> None:
    assert KEYS.owned_by("r0") == "example.com/shard=r0"
    assert KEYS.unassigned == "!example.com/shard"
    expected = (
        f"example.com/shard,example.com/shard notin ({','.join(owners)})"
        if owners
        else "example.com/shard"
    )
    assert KEYS.orphaned(owners) == expected


async def test_a_root_labelled_by_hand_with_this_replica_admits_no_pass() -> None:
    """The label names this replica but the sharder gave the root to another one (the
    ``assigned`` annotation): that one holds its objects, so nothing runs here."""
    cache = Cache()
    cache.root = thing("r0", assigned="r1")
    calls: list[Request] = []

    async def reconcile(request: Request) -> Result:
        calls.append(request)
        return Result()

    client = Patches()
    gate = new_gate(client)
    gated = gate.wrap("things", cache.resolve, reconcile)
    assert await gated(Request("ns", "a")) == Result()
    assert calls == []
    cache.root = thing("r0")  # the sharder put it back, to this replica: admitted
    await gated(Request("ns", "a"))
    assert calls == [Request("ns", "a")]

