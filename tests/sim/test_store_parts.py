"""The store's parts on their own: object table, change feed order, watch hub, delete path."""

from __future__ import annotations

from typing import Any

import pytest

from rayop.apimachinery.labels import parse_label_selector
from rayop.sim.machinery.errors import StatusError
from rayop.sim.machinery.field_selectors import parse_field_selector
from rayop.sim.machinery.resources import ResourceInfo, ResourceRegistry
from rayop.sim.storage.delete_path import DeletePath
from rayop.sim.storage.objects import ObjectTable
from rayop.sim.storage.store import Store
from rayop.sim.storage.watch_hub import WatchHub

Obj = dict[str, Any]


class RecordingPersistence:
    """Keeps every write in memory, in order."""

    def __init__(self) -> None:
        self.writes: list[tuple[int, str, str, str, Obj | None]] = []

    def load(self) -> tuple[int, list[tuple[str, Obj]]]:
        return 0, []

    def write(self, rv: int, key: str, namespace: str, name: str, obj: Obj | None) -> None:
        self.writes.append((rv, key, namespace, name, obj))


def _configmaps(resources: ResourceRegistry) -> ResourceInfo:
    info = resources.get("", "v1", "configmaps")
    assert info is not None
    return info


def _cm(name: str, **labels: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}}


async def test_table_persists_a_commit_before_the_change_feed_sees_it() -> None:
    persistence = RecordingPersistence()
    table = ObjectTable(ResourceRegistry(), persistence=persistence)
    cms = _configmaps(table.resources)
    seen: list[tuple[str, int, int]] = []
    table.subscribe(lambda t, _i, obj, _old: seen.append((t, table.rv, len(persistence.writes))))
    table.commit(cms, "ADDED", "default", "a", _cm("a"), None)
    gone = table.commit(cms, "DELETED", "default", "a", _cm("a"), None)
    assert seen == [("ADDED", 1, 1), ("DELETED", 2, 2)]
    assert persistence.writes[-1] == (2, "/configmaps", "default", "a", None)
    assert gone["metadata"]["resourceVersion"] == "2" and table.find(cms, "default", "a") is None


async def test_table_lists_sorted_and_filtered_with_the_current_rv() -> None:
    table = ObjectTable(ResourceRegistry(), persistence=None)
    cms = _configmaps(table.resources)
    for ns, name, app in (("b", "x", "web"), ("a", "z", "web"), ("a", "y", "db")):
        table.commit(cms, "ADDED", ns, name, _cm(name, app=app), None)
    web = parse_label_selector("app=web")
    items, rv = table.list(cms, None, web, parse_field_selector(None), copy=False)
    assert [(o["metadata"]["name"]) for o in items] == ["z", "x"] and rv == 3
    assert table.resource_keys() == ["/configmaps"] and not table.namespace_empty("a")


async def test_watch_hub_records_a_change_before_later_subscribers_run() -> None:
    table = ObjectTable(ResourceRegistry(), persistence=None)
    hub = WatchHub(table, history_size=10)
    cms = _configmaps(table.resources)
    replayed: list[list[int]] = []

    def open_from_previous_rv(_t: str, _i: ResourceInfo, _obj: Obj, _old: Obj | None) -> None:
        stream = hub.open(
            cms,
            "default",
            resource_version=str(table.rv - 1),
            lsel=parse_label_selector(None),
            fsel=parse_field_selector(None),
            shown=cms,
            convert=None,
        )
        replayed.append([stream.pending()])
        stream.close()

    table.subscribe(open_from_previous_rv)
    table.commit(cms, "ADDED", "default", "a", _cm("a"), None)
    assert replayed == [[1]]


async def test_watch_hub_expires_resource_versions_older_than_its_history() -> None:
    table = ObjectTable(ResourceRegistry(), persistence=None)
    hub = WatchHub(table, history_size=2)
    cms = _configmaps(table.resources)
    for name in "abcd":
        table.commit(cms, "ADDED", "default", name, _cm(name), None)

    def open_from(rv: str) -> int:
        stream = hub.open(
            cms,
            None,
            resource_version=rv,
            lsel=parse_label_selector(None),
            fsel=parse_field_selector(None),
            shown=cms,
            convert=None,
        )
        pending = stream.pending()
        stream.close()
        return pending

    assert open_from("0") == 4  # the current state, as synthetic ADDED events
    assert open_from("2") == 2  # the changes after RV 2 are still kept
    with pytest.raises(StatusError) as caught:
        open_from("1")
    assert caught.value.code == 410


async def test_delete_path_finishes_a_deletion_when_the_last_finalizer_goes() -> None:
    table = ObjectTable(ResourceRegistry(), persistence=None)
    deletes = DeletePath(table, wall_clock=lambda: 1_700_000_000.0, graceful_pod_deletion=True)
    cms = _configmaps(table.resources)
    held = _cm("held")
    held["metadata"]["finalizers"] = ["example.com/keep"]
    table.commit(cms, "ADDED", "default", "held", held, None)
    marked = await deletes.delete(cms, "default", "held")
    assert marked["metadata"]["deletionTimestamp"] == "2023-11-14T22:13:20Z"
    old = table.find(cms, "default", "held")
    assert old is not None
    released = dict(old, metadata=dict(old["metadata"], finalizers=[]))
    gone = deletes.commit_change(cms, "default", "held", released, old, dry_run=False, copy=True)
    assert table.find(cms, "default", "held") is None and "finalizers" not in gone["metadata"]


async def test_store_forwards_writes_to_its_parts_with_their_signatures() -> None:
    store = Store(seed=2)
    cms = _configmaps(store.resources)
    assert Store.create.__doc__ and "Creates an object" in Store.create.__doc__
    made = await store.create(cms, "default", _cm("f"))
    updated = await store.update(cms, "default", "f", dict(made, data={"k": "v"}))
    assert updated["data"] == {"k": "v"}
    assert await store.finalize_delete(cms, "default", "missing") is True
    await store.delete(cms, "default", "f")
    assert store.peek(cms, "default", "f") is None
