"""The sharder and the membership it reads, on the embedded plane with core kinds standing in
for an operator's: ConfigMaps are the roots, Secrets their objects (found by the root label)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from datetime import timedelta
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest

from rayop.kube.client import KubeClient
from rayop.kube.clock import micro_time
from rayop.kube.errors import Gone
from rayop.kube.resources import CONFIGMAPS, LEASES, SECRETS
from rayop.runtime.leaderelection import LeaderElectionSettings
from rayop.runtime.sharding.keys import ShardKeys
from rayop.runtime.sharding.membership import Membership, member_elector
from rayop.runtime.sharding.metrics import ShardMetrics
from rayop.runtime.sharding.objects import RELABELS_IN_FLIGHT, RootObjects
from rayop.runtime.sharding.rendezvous import Rendezvous
from rayop.runtime.sharding.sharder import ASSIGN_BATCH, RootKind, Sharder
from rayop.runtime.sharding.slim import HAS_STATUS, OTHER_ANNOTATIONS, slim_root
from rayop.testing import FakeClock, RecordingEventSink, open_control_plane

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
NS = "default"
ROOTS = 24


async def hold(client: KubeClient, member: str) -> None:
    """Writes a held membership Lease for ``member`` (or renews it)."""
    now = micro_time(FakeClock().wall())
    name = KEYS.lease_name(member)
    spec = {"holderIdentity": member, "leaseDurationSeconds": 10, "renewTime": now}
    try:
        lease = await client.get(LEASES, name, namespace=NS)
    except Exception:
        body = {"metadata": {"name": name, "labels": {KEYS.lease: "true"}}, "spec": spec}
        await client.create(LEASES, body, namespace=NS)
        return
    lease["spec"] = {**spec, "leaseTransitions": int(lease["spec"].get("leaseTransitions", 0)) + 1}
    await client.update(LEASES, lease)


def labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict(obj["metadata"].get("labels") or {})


async def roots(client: KubeClient) -> dict[str, dict[str, Any]]:
    listed = await client.list(CONFIGMAPS, namespace=NS, label_selector="kind=root")
    return {o["metadata"]["name"]: o for o in listed["items"]}


async def children(client: KubeClient) -> dict[str, dict[str, Any]]:
    listed = await client.list(SECRETS, namespace=NS, label_selector=KEYS.root)
    return {o["metadata"]["labels"][KEYS.root]: o for o in listed["items"]}


async def test_membership_counts_a_lease_alive_until_it_stops_changing_for_its_duration() -> None:
    clock = FakeClock()
    async with open_control_plane(crds=False) as plane:
        membership = Membership(plane.client, NS, KEYS, clock=clock)
        assert await membership.live() == frozenset()
        await hold(plane.client, "a")
        await hold(plane.client, "b")
        assert await membership.live() == {"a", "b"}
        clock.step(6)
        await hold(plane.client, "a")
        assert await membership.live() == {"a", "b"}
        clock.step(6)  # b unchanged for 12 s > 10 s
        assert await membership.live() == {"a"}


async def test_the_lease_of_a_replica_gone_for_five_minutes_is_deleted_and_no_other() -> None:
    clock = FakeClock()
    async with open_control_plane(crds=False) as plane:
        membership = Membership(plane.client, NS, KEYS, clock=clock)
        for member in ("a", "b", "c"):
            await hold(plane.client, member)
        await membership.live()
        clock.step(299)
        await hold(plane.client, "a")
        await membership.live()
        assert await membership.forget_gone() == [], "nothing unchanged for 300 s yet"
        clock.step(2)
        await membership.live()
        await hold(plane.client, "c")  # renewed after the read: its delete must not happen
        assert await membership.forget_gone() == ["b"]
        left = await plane.client.list(LEASES, namespace=NS)
        assert sorted(o["metadata"]["name"] for o in left["items"]) == ["shard-a", "shard-c"]
        assert await membership.live() == {"a", "c"}


async def test_a_member_elector_holds_a_labelled_lease_and_releases_it_on_stop() -> None:
    timing = LeaderElectionSettings(lease_duration=3, renew_deadline=2, retry_period=0.5)
    async with open_control_plane(crds=False) as plane:
        elector = member_elector(plane.client, "r7", KEYS, timing)
        running = asyncio.create_task(elector.run())
        membership = Membership(plane.client, NS, KEYS)
        for _ in range(100):
            if await membership.live() == {"r7"}:
                break
            await asyncio.sleep(0.02)
        assert await membership.live() == {"r7"}
        lease = await plane.client.get(LEASES, "shard-r7", namespace=NS)
        assert lease["metadata"]["labels"] == {KEYS.lease: "true"}
        assert lease["spec"]["holderIdentity"].startswith("r7_")
        await elector.stop()
        assert await running is False
        assert await membership.live() == frozenset(), "a released Lease is gone at once"


async def test_the_sharder_assigns_drains_moves_and_takes_over() -> None:
    clock = FakeClock()
    async with open_control_plane(crds=False) as plane:
        client = plane.client
        for i in range(ROOTS):
            root = await client.create(
                CONFIGMAPS, {"metadata": {"name": f"root-{i}", "labels": {"kind": "root"}}},
                namespace=NS,
            )  # fmt: skip
            child = {"metadata": {"name": f"child-{i}", "labels": {KEYS.root: root["metadata"]["uid"]}}}
            await client.create(SECRETS, child, namespace=NS)
        await client.create(CONFIGMAPS, {"metadata": {"name": "not-a-root"}}, namespace=NS)
        await hold(client, "r0")
        await hold(client, "r1")
        metrics_registry = CollectorRegistry()
        metrics = ShardMetrics(metrics_registry)
        sharder = Sharder(
            client,
            Membership(client, NS, KEYS, clock=clock),
            KEYS,
            [RootKind(CONFIGMAPS, lambda o: labels(o).get("kind") == "root")],
            [SECRETS],
            metrics=metrics,
            clock=clock,
        )
        await sharder.step()
        two = Rendezvous({"r0", "r1"})
        by_name = await roots(client)
        for name, root in by_name.items():
            assert labels(root)[KEYS.shard] == two.owner(f"{NS}/{name}")
            child = (await children(client))[root["metadata"]["uid"]]
            assert labels(child)[KEYS.shard] == labels(root)[KEYS.shard], "children follow"
            handover = root["metadata"]["annotations"][KEYS.handover]
            assert handover.startswith("secrets=")
            assert int(handover.split("=")[1]) >= int(str(child["metadata"]["resourceVersion"]))
        assert "labels" not in (await client.get(CONFIGMAPS, "not-a-root", namespace=NS))["metadata"]
        assert metrics.unassigned._value.get() == 0

        # A third replica joins: the roots it should own are asked to drain, nothing moves yet.
        await hold(client, "r2")
        await sharder.step()
        three = Rendezvous({"r0", "r1", "r2"})
        by_name = await roots(client)
        joining = {n for n in by_name if three.owner(f"{NS}/{n}") == "r2"}
        assert joining
        for name, root in by_name.items():
            assert labels(root)[KEYS.shard] == two.owner(f"{NS}/{name}")
            assert (labels(root).get(KEYS.drain) == "true") == (name in joining)
        # Their owners acknowledge (drop both labels); the next step gives them to r2.
        for name in joining:
            root = by_name[name]
            owner = labels(root)[KEYS.shard]
            ops = [
                {"op": "remove", "path": "/metadata/labels/example.com~1drain"},
                {"op": "remove", "path": "/metadata/labels/example.com~1shard"},
                {"op": "add", "path": "/metadata/labels/example.com~1released", "value": owner},
            ]
            await client.patch(CONFIGMAPS, name, ops, namespace=NS, patch_type="json")
        await sharder.step()
        by_name = await roots(client)
        kids = await children(client)
        for name, root in by_name.items():
            assert labels(root)[KEYS.shard] == three.owner(f"{NS}/{name}")
            assert KEYS.drain not in labels(root) and KEYS.released not in labels(root)
            assert labels(kids[root["metadata"]["uid"]])[KEYS.shard] == labels(root)[KEYS.shard]
        assert metrics.moves._value.get() == len(joining), "one move per drain requested"

        # r1 stops renewing: once its Lease is older than its duration, its roots move at once.
        clock.step(6)
        await hold(client, "r0")
        await hold(client, "r2")
        clock.step(6)
        lost = {n for n, r in by_name.items() if labels(r)[KEYS.shard] == "r1"}
        await sharder.step()
        survivors = Rendezvous({"r0", "r2"})
        by_name = await roots(client)
        for name in lost:
            assert labels(by_name[name])[KEYS.shard] == survivors.owner(f"{NS}/{name}")
        assert metrics.moves._value.get() == len(joining) + len(lost)
        exposition = generate_latest(metrics_registry).decode()
        for name in (
            "rayop_shard_objects{",
            "rayop_shard_unassigned_objects ",
            "rayop_shard_moves_total ",
            "rayop_shard_drain_seconds_bucket{",
        ):
            assert name in exposition
        assert {labels(r)[KEYS.shard] for r in by_name.values()} <= {"r0", "r2"}


async def test_a_root_whose_shard_label_was_removed_by_hand_goes_back_to_its_owner() -> None:
    async with open_control_plane(crds=False) as plane:
        client = plane.client
        for member in ("r0", "r1", "r2"):
            await hold(client, member)
        ring = Rendezvous({"r0", "r1", "r2"})
        name = next(f"root-{i}" for i in range(50) if ring.owner(f"{NS}/root-{i}") != "r0")
        root = await client.create(
            CONFIGMAPS, {"metadata": {"name": name, "labels": {"kind": "root"}}}, namespace=NS
        )
        uid = root["metadata"]["uid"]
        child = {"metadata": {"name": "child", "labels": {KEYS.root: uid, KEYS.shard: "r0"}}}
        await client.create(SECRETS, child, namespace=NS)
        sharder = Sharder(
            client, Membership(client, NS, KEYS), KEYS, [RootKind(CONFIGMAPS)], [SECRETS]
        )
        await sharder.step()
        back = await client.get(CONFIGMAPS, name, namespace=NS)
        assert labels(back)[KEYS.shard] == "r0", "r0 holds its objects: no move without a drain"
        # Acknowledged by r0, the same root goes to its ring owner, its objects first.
        ops = [
            {"op": "remove", "path": "/metadata/labels/example.com~1shard"},
            {"op": "add", "path": "/metadata/labels/example.com~1released", "value": "r0"},
        ]
        await client.patch(CONFIGMAPS, name, ops, namespace=NS, patch_type="json")
        await sharder.step()
        moved = await client.get(CONFIGMAPS, name, namespace=NS)
        assert labels(moved)[KEYS.shard] == ring.owner(f"{NS}/{name}")
        assert labels((await children(client))[uid])[KEYS.shard] == ring.owner(f"{NS}/{name}")


async def test_a_sharder_with_watched_namespaces_assigns_only_their_roots() -> None:
    async with open_control_plane(crds=False) as plane:
        client = plane.client
        await hold(client, "r0")
        for namespace in ("watched", "other"):
            await plane.namespace(namespace)
            body = {"metadata": {"name": "root", "labels": {"kind": "root"}}}
            await client.create(CONFIGMAPS, body, namespace=namespace)
        sharder = Sharder(
            client, Membership(client, NS, KEYS), KEYS, [RootKind(CONFIGMAPS)], [SECRETS],
            namespaces=["watched"],
        )  # fmt: skip
        await sharder.step()
        watched = await client.get(CONFIGMAPS, "root", namespace="watched")
        other = await client.get(CONFIGMAPS, "root", namespace="other")
        assert labels(watched)[KEYS.shard] == "r0"
        assert KEYS.shard not in labels(other), "a namespace the operator does not watch"


async def set_label(client: KubeClient, name: str, value: str | None) -> None:
    """Edits a root's shard label by hand (None: removes it)."""
    label = {"labels": {KEYS.shard: value}}
    await client.patch(CONFIGMAPS, name, {"metadata": label}, namespace=NS)


async def test_a_shard_label_edited_by_hand_goes_back_to_the_assigned_replica_with_an_event() -> None:
    async with open_control_plane(crds=False) as plane:
        client = plane.client
        for member in ("r0", "r1", "r2"):
            await hold(client, member)
        root = await client.create(
            CONFIGMAPS, {"metadata": {"name": "root", "labels": {"kind": "root"}}}, namespace=NS
        )
        child = {"metadata": {"name": "child", "labels": {KEYS.root: root["metadata"]["uid"]}}}
        await client.create(SECRETS, child, namespace=NS)
        events = RecordingEventSink()
        sharder = Sharder(
            client, Membership(client, NS, KEYS), KEYS, [RootKind(CONFIGMAPS)], [SECRETS],
            events=events,
        )  # fmt: skip
        await sharder.step()
        stored = await client.get(CONFIGMAPS, "root", namespace=NS)
        owner = labels(stored)[KEYS.shard]
        assert stored["metadata"]["annotations"][KEYS.assigned] == owner
        other = sorted({"r0", "r1", "r2"} - {owner})[0]

        # Removed, set to an unknown replica, set to another live replica: each time the label
        # goes back to the owner (the next step; a live replica: the next full rebalance),
        # the objects stay where they are, and a Warning event says what happened.
        for edit in (None, "r9", other):
            await set_label(client, "root", edit)
            sharder._unsettled = edit == other  # the edit to a live replica: a full round
            await sharder.step()
            back = await client.get(CONFIGMAPS, "root", namespace=NS)
            assert labels(back)[KEYS.shard] == owner, edit
            assert labels((await children(client))[root["metadata"]["uid"]])[KEYS.shard] == owner
        assert events.reasons() == ["ShardLabelRestored"] * 3
        assert "removed by hand" in events.notes()[0]
        assert "'r9'" in events.notes()[1] and f"'{other}'" in events.notes()[2]
        assert all(f"put back to replica {owner}" in note for note in events.notes())

        # The replica the edit names sees it at once and asks for the repair, with no round.
        await set_label(client, "root", other)
        edited = await client.get(CONFIGMAPS, "root", namespace=NS)
        assert await sharder.repair(CONFIGMAPS, edited)
        assert labels(await client.get(CONFIGMAPS, "root", namespace=NS))[KEYS.shard] == owner
        assert not await sharder.repair(CONFIGMAPS, edited), "a stale copy writes nothing"
        assert events.reasons() == ["ShardLabelRestored"] * 4

        # Set by hand to another replica while the assigned one is gone: no one holds it, so it
        # is assigned as usual (its objects follow), with a ShardMoved event.
        await set_label(client, "root", other)
        live = frozenset({"r0", "r1", "r2"} - {owner})
        stored = await client.get(CONFIGMAPS, "root", namespace=NS)
        assert sharder.restore_to(stored, live) is None
        await sharder.assign(CONFIGMAPS, stored, Rendezvous(live))
        moved = await client.get(CONFIGMAPS, "root", namespace=NS)
        new_owner = Rendezvous(live).owner(f"{NS}/root")
        assert labels(moved)[KEYS.shard] == new_owner
        assert moved["metadata"]["annotations"][KEYS.assigned] == new_owner
        assert labels((await children(client))[root["metadata"]["uid"]])[KEYS.shard] == new_owner
        assert events.reasons()[-1] == "ShardMoved"


async def test_a_root_reconciled_before_sharding_adopts_its_unlabelled_objects() -> None:
    """A root with a status and no assignment ever: an operator without sharding made its
    objects, which carry neither label; they are found by ownerReferences (through one another
    too) and labelled with the shard and the root before the root is assigned."""
    async with open_control_plane(crds=False) as plane:
        client = plane.client
        await hold(client, "r0")

        def owned_by(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
            ref = {"apiVersion": "v1", "kind": "Secret", "name": obj["metadata"]["name"],
                   "uid": obj["metadata"]["uid"], "controller": True}  # fmt: skip
            return [ref]

        old = await client.create(
            CONFIGMAPS, {"metadata": {"name": "old", "labels": {"kind": "root"}},
                         "data": {"status": "reconciled"}}, namespace=NS,
        )  # fmt: skip
        old["status"] = {"state": "ready"}  # what the sharder lists (a CRD's status stands in)
        direct = await client.create(
            SECRETS, {"metadata": {"name": "direct", "ownerReferences": owned_by(old)}}, namespace=NS
        )
        await client.create(
            SECRETS,
            {"metadata": {"name": "indirect", "ownerReferences": owned_by(direct)}},
            namespace=NS,
        )
        await client.create(SECRETS, {"metadata": {"name": "someone-elses"}}, namespace=NS)
        sharder = Sharder(
            client, Membership(client, NS, KEYS), KEYS, [RootKind(CONFIGMAPS)], [SECRETS]
        )
        assert sharder.objects.needs_adoption(old)
        await sharder._assign_all(RootKind(CONFIGMAPS), [old], Rendezvous({"r0"}))
        uid = old["metadata"]["uid"]
        for name in ("direct", "indirect"):
            secret = await client.get(SECRETS, name, namespace=NS)
            assert labels(secret) == {KEYS.shard: "r0", KEYS.root: uid}, name
        assert labels(await client.get(SECRETS, "someone-elses", namespace=NS)) == {}
        root = await client.get(CONFIGMAPS, "old", namespace=NS)
        assert root["metadata"]["annotations"][KEYS.assigned] == "r0"
        assert root["metadata"]["annotations"][KEYS.handover].startswith("secrets=")
        root["status"] = {"state": "ready"}
        assert not sharder.objects.needs_adoption(root), "assigned once: its objects carry the labels"


async def test_membership_ignores_the_clocks_of_other_replicas() -> None:
    """Clock skew: a replica whose clock runs an hour behind (its renewTime looks stale) is alive
    while its Lease keeps changing, and one whose clock runs an hour ahead (its renewTime looks
    fresh for an hour) is gone once its Lease stops changing for its duration: only the
    observer's own clock measures."""
    clock = FakeClock()
    async with open_control_plane(crds=False) as plane:
        client = plane.client
        membership = Membership(client, NS, KEYS, clock=clock)

        async def renew(member: str, skew: float, count: int) -> None:
            now = micro_time(FakeClock().wall() + timedelta(seconds=skew))
            spec = {"holderIdentity": member, "leaseDurationSeconds": 10, "renewTime": now,
                    "leaseTransitions": count}  # fmt: skip
            name = KEYS.lease_name(member)
            try:
                lease = await client.get(LEASES, name, namespace=NS)
            except Exception:
                body = {"metadata": {"name": name, "labels": {KEYS.lease: "true"}}, "spec": spec}
                await client.create(LEASES, body, namespace=NS)
                return
            lease["spec"] = spec
            await client.update(LEASES, lease)

        await renew("behind", -3600, 0)
        await renew("ahead", 3600, 0)
        assert await membership.live() == {"behind", "ahead"}
        for count in range(1, 4):
            clock.step(6)
            await renew("behind", -3600 + 6 * count, count)
            assert "behind" in await membership.live()
        assert await membership.live() == {"behind"}, "ahead stopped changing 18 s ago"


class PatchOrder:
    """The sharder's client, recording the name of each object patched, in order."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.patched: list[str] = []

    async def get(self, res: Any, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        return await self.client.get(res, name, namespace=namespace)

    async def list(self, res: Any, **options: Any) -> dict[str, Any]:
        return await self.client.list(res, **options)

    def list_pages(self, res: Any, **options: Any) -> AsyncIterator[dict[str, Any]]:
        return self.client.list_pages(res, **options)

    async def patch(self, res: Any, name: str, body: Any, **options: Any) -> dict[str, Any]:
        self.patched.append(name)
        return await self.client.patch(res, name, body, **options)


async def test_the_roots_of_a_replica_that_is_gone_are_assigned_before_new_roots() -> None:
    """A dead replica's roots wait unreconciled until owned again; a new root only for its first
    pass: the sharder takes the former first (their objects, then them), then the new ones."""
    async with open_control_plane(crds=False) as plane:
        client = plane.client
        await hold(client, "r0")
        for i in range(ROOTS):
            meta: dict[str, Any] = {"name": f"new-{i}", "labels": {"kind": "root"}}
            await client.create(CONFIGMAPS, {"metadata": meta}, namespace=NS)
        orphans = set()
        for i in range(ROOTS // 2):
            meta = {
                "name": f"orphan-{i}",
                "labels": {"kind": "root", KEYS.shard: "gone"},
                "annotations": {KEYS.assigned: "gone"},
            }
            root = await client.create(CONFIGMAPS, {"metadata": meta}, namespace=NS)
            child = {"metadata": {"name": f"child-{i}", "labels": {
                KEYS.root: root["metadata"]["uid"], KEYS.shard: "gone"}}}  # fmt: skip
            await client.create(SECRETS, child, namespace=NS)
            orphans |= {f"orphan-{i}", f"child-{i}"}
        recording = PatchOrder(client)
        sharder = Sharder(recording, Membership(client, NS, KEYS), KEYS, [RootKind(CONFIGMAPS)], [SECRETS])
        await sharder.step()
        assert len(recording.patched) == len(orphans) + ROOTS
        assert set(recording.patched[: len(orphans)]) == orphans, recording.patched
        assert {labels(r)[KEYS.shard] for r in (await roots(client)).values()} == {"r0"}


async def test_a_sharder_round_deletes_the_lease_of_a_replica_gone_for_five_minutes() -> None:
    clock = FakeClock()
    async with open_control_plane(crds=False) as plane:
        client = plane.client
        await hold(client, "r0")
        await hold(client, "gone")
        sharder = Sharder(
            client, Membership(client, NS, KEYS, clock=clock), KEYS, [RootKind(CONFIGMAPS)],
            [SECRETS], clock=clock,
        )  # fmt: skip
        await sharder.step()
        for _ in range(31):  # a full round at least every 30 steps
            clock.step(10)
            await hold(client, "r0")
            await sharder.step()
        left = await client.list(LEASES, namespace=NS)
        assert [o["metadata"]["name"] for o in left["items"]] == ["shard-r0"]


async def test_a_roots_objects_are_relabelled_together_and_a_deleted_one_is_skipped() -> None:
    """The patches of one root's objects go out together (bounded by RELABELS_IN_FLIGHT), so a
    dead replica's roots are owned again after one round trip per root, not one per object; an
    object deleted meanwhile is skipped, and the highest resourceVersion written is returned."""
    async with open_control_plane(crds=False) as plane:
        client = plane.client
        created = [
            await client.create(SECRETS, {"metadata": {"name": f"s{i}"}}, namespace=NS)
            for i in range(RELABELS_IN_FLIGHT + 3)
        ]
        gone = created[-1]
        await client.delete(SECRETS, gone["metadata"]["name"], namespace=NS)
        in_flight = 0
        most = 0
        release = asyncio.Event()

        class Gated:
            async def list(self, res: Any, **options: Any) -> dict[str, Any]:
                return await client.list(res, **options)

            async def patch(
                self, res: Any, name: str, body: Any, *, namespace: str | None = None,
                patch_type: Any = "merge",
            ) -> dict[str, Any]:  # fmt: skip
                nonlocal in_flight, most
                in_flight += 1
                most = max(most, in_flight)
                if most >= RELABELS_IN_FLIGHT:
                    release.set()
                await release.wait()
                try:
                    return await client.patch(res, name, body, namespace=namespace)
                finally:
                    in_flight -= 1

        objects = RootObjects(Gated(), KEYS, [SECRETS])
        async with asyncio.timeout(10):
            versions = await objects.relabel(
                [(SECRETS, o) for o in created], NS, "r1", "root-uid"
            )
        assert most == RELABELS_IN_FLIGHT, "the patches went out together, bounded"
        listed = await client.list(SECRETS, namespace=NS, label_selector=f"{KEYS.shard}=r1")
        assert len(listed["items"]) == len(created) - 1
        top = max(int(o["metadata"]["resourceVersion"]) for o in listed["items"])
        assert versions == {str(SECRETS): top}


async def test_a_replica_gone_while_new_roots_are_given_out_ends_the_round_early() -> None:
    """A burst of new roots does not hold back a dead replica's: the live replicas are read
    again after each batch of ASSIGN_BATCH new roots, and when one is gone the round ends and
    asks for the next at once, which takes that replica's roots first."""
    async with open_control_plane(crds=False) as plane:
        client = plane.client
        for i in range(2 * ASSIGN_BATCH):
            meta: dict[str, Any] = {"name": f"new-{i}", "labels": {"kind": "root"}}
            await client.create(CONFIGMAPS, {"metadata": meta}, namespace=NS)

        class Dying(Membership):
            """r1 is alive for the round's first read only."""

            reads = 0

            async def live(self) -> frozenset[str]:
                self.reads += 1
                return frozenset({"r0", "r1"} if self.reads == 1 else {"r0"})

            async def forget_gone(self, after: float = 300.0) -> list[str]:
                return []

        sharder = Sharder(client, Dying(client, NS, KEYS), KEYS, [RootKind(CONFIGMAPS)], [])
        assert await sharder.step() is True, "the round ended when r1 was found gone"
        owners = [labels(r).get(KEYS.shard) for r in (await roots(client)).values()]
        assert owners.count(None) == ASSIGN_BATCH, "one batch given out, then the round ended"
        assert "r1" in owners, "r1 was alive for the first batch"
        assert await sharder.step() is False
        assert {labels(r)[KEYS.shard] for r in (await roots(client)).values()} == {"r0"}


async def test_the_sharder_holds_listed_roots_slim() -> None:
    """A full round at tens of thousands of roots must not hold every spec at once: what the
    root kind's predicates see is the metadata (no managedFields) and whether a status exists."""
    async with open_control_plane(crds=False) as plane:
        client = plane.client
        await hold(client, "r0")
        for i in range(3):
            meta = {"name": f"root-{i}", "labels": {"kind": "root"}}
            await client.create(CONFIGMAPS, {"metadata": meta, "data": {"big": "x" * 1000}},
                                namespace=NS)  # fmt: skip
        seen: list[Mapping[str, Any]] = []

        def is_root(obj: Mapping[str, Any]) -> bool:
            seen.append(obj)
            return labels(obj).get("kind") == "root"

        sharder = Sharder(client, Membership(client, NS, KEYS), KEYS,
                          [RootKind(CONFIGMAPS, is_root)], [SECRETS])  # fmt: skip
        await sharder.step()
        assert {o["metadata"]["name"] for o in seen} >= {"root-0", "root-1", "root-2"}
        assert all(set(o) <= {"apiVersion", "kind", "metadata", "status"} for o in seen)
        assert all("managedFields" not in o["metadata"] for o in seen)
        assert {labels(r)[KEYS.shard] for r in (await roots(client)).values()} == {"r0"}


def test_a_slim_root_keeps_what_the_sharder_reads_and_whether_it_has_a_status() -> None:
    full: dict[str, Any] = {
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                     "generation": 3, "creationTimestamp": "2026-12-05T00:00:00Z",
                     "labels": {"l": "1"}, "managedFields": [{}],
                     "annotations": {KEYS.assigned: "r1", "kubectl.kubernetes.io/"
                                     "last-applied-configuration": "{...the whole spec...}"},
                     "ownerReferences": [{"kind": "RayJob", "name": "j", "controller": True},
                                         {"kind": "Other", "name": "o"}]},
        "spec": {"headGroupSpec": {}}, "status": {"state": "ready"},
    }  # fmt: skip
    slim = slim_root(full, (KEYS.assigned, KEYS.handover))
    assert slim == {
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                     "labels": {"l": "1"},
                     "annotations": {KEYS.assigned: "r1", OTHER_ANNOTATIONS: ""},
                     "ownerReferences": [{"kind": "RayJob", "name": "j", "controller": True}]},
        "status": HAS_STATUS,
    }  # fmt: skip
    assert "status" not in slim_root({**full, "status": {}})
    only_mine = {**full, "metadata": {**full["metadata"], "annotations": {KEYS.assigned: "r1"}}}
    assert slim_root(only_mine, (KEYS.assigned,))["metadata"]["annotations"] == {
        KEYS.assigned: "r1"
    }
    bare = slim_root({"metadata": {"name": "b", "annotations": {}}})
    assert bare["metadata"] == {"name": "b"}


async def test_a_continue_token_that_expires_mid_list_lists_again_unpaged() -> None:
    async with open_control_plane(crds=False) as plane:
        client = plane.client
        await hold(client, "r0")
        for i in range(4):
            meta = {"name": f"root-{i}", "labels": {"kind": "root"}}
            await client.create(CONFIGMAPS, {"metadata": meta}, namespace=NS)

        class Expiring(PatchOrder):
            async def list_pages(self, res: Any, **options: Any) -> AsyncIterator[dict[str, Any]]:
                async for page in self.client.list_pages(res, **{**options, "limit": 1}):
                    yield page
                    raise Gone({"code": 410, "reason": "Expired"})

        recording = Expiring(client)
        metrics = ShardMetrics(CollectorRegistry())
        sharder = Sharder(recording, Membership(client, NS, KEYS), KEYS,
                          [RootKind(CONFIGMAPS, lambda o: labels(o).get("kind") == "root")],
                          [SECRETS], metrics=metrics)  # fmt: skip
        await sharder.step()
        assert sorted(recording.patched) == [f"root-{i}" for i in range(4)]  # each once
        # The full round read its pages one at a time: the page before the expiry is not
        # counted twice.
        assert metrics.objects.labels("r0")._value.get() == 4
        assert metrics.unassigned._value.get() == 0


async def test_a_full_round_reads_metadata_only_and_a_hand_labelled_root_again_whole() -> None:
    """A full round needs only the roots' metadata: it asks the server for nothing else. A root
    it finds labelled by hand is read whole before it is assigned: a status tells that an
    operator without sharding ran on it, and its objects are adopted."""
    async with open_control_plane(crds=False) as plane:
        client = plane.client
        await hold(client, "r0")

        class Recording(PatchOrder):
            """Records each list's options; a GET answers with a status, as a CRD's would."""

            def __init__(self, client: KubeClient) -> None:
                super().__init__(client)
                self.lists: list[tuple[str | None, bool]] = []

            def list_pages(self, res: Any, **options: Any) -> AsyncIterator[dict[str, Any]]:
                self.lists.append(
                    (options.get("label_selector"), bool(options.get("metadata_only")))
                )
                return self.client.list_pages(res, **options)

            async def get(
                self, res: Any, name: str, *, namespace: str | None = None
            ) -> dict[str, Any]:
                obj = await self.client.get(res, name, namespace=namespace)
                return {**obj, "status": {"state": "ready"}}

        old = await client.create(
            CONFIGMAPS,
            {"metadata": {"name": "old", "labels": {"kind": "root", KEYS.shard: "r0"}}},
            namespace=NS,
        )
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "old",
               "uid": old["metadata"]["uid"], "controller": True}  # fmt: skip
        await client.create(SECRETS, {"metadata": {"name": "made-before", "ownerReferences": [ref]}},
                            namespace=NS)  # fmt: skip
        recording = Recording(client)
        sharder = Sharder(recording, Membership(client, NS, KEYS), KEYS,
                          [RootKind(CONFIGMAPS, lambda o: labels(o).get("kind") == "root")],
                          [SECRETS])  # fmt: skip
        await sharder.step()
        full = [metadata_only for selector, metadata_only in recording.lists if selector is None]
        assert full == [True], recording.lists
        assert not any(m for selector, m in recording.lists if selector is not None)
        secret = await client.get(SECRETS, "made-before", namespace=NS)
        assert labels(secret) == {KEYS.shard: "r0", KEYS.root: old["metadata"]["uid"]}
        stored = await client.get(CONFIGMAPS, "old", namespace=NS)
        assert stored["metadata"]["annotations"][KEYS.assigned] == "r0"
