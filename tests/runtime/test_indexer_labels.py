"""The informer cache's label indexes: a labelled list gives what a full scan gives, and costs
the objects carrying the label, not the whole namespace."""

from __future__ import annotations

import random
from typing import Any

import pytest

from rayop.apimachinery.labels import LabelSelector, as_label_selector
from rayop.runtime.informers import indexer as indexer_module
from rayop.runtime.informers.indexer import Indexer, object_key

NAMESPACES = ("a", "b", "c")
SELECTORS = (
    "ray.io/cluster=c1",
    "ray.io/cluster=c2,ray.io/node-type=worker",
    "ray.io/cluster in (c0,c3)",
    "ray.io/node-type=head",
    "ray.io/cluster=c1,ray.io/node-type!=head",
    "ray.io/cluster",
    "!ray.io/cluster",
    "ray.io/cluster notin (c1)",
    "ray.io/cluster=missing",
    "ray.io/cluster in ()",
    "",
)


def obj(namespace: str, name: str, labels: dict[str, str] | None, rv: int) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": namespace, "name": name, "resourceVersion": str(rv)}
    if labels is not None:
        meta["labels"] = labels
    return {"metadata": meta, "spec": {"n": rv}}


def random_labels(rng: random.Random) -> dict[str, str] | None:
    if rng.random() < 0.1:
        return None
    labels: dict[str, str] = {}
    if rng.random() < 0.8:
        labels["ray.io/cluster"] = f"c{rng.randrange(5)}"
    if rng.random() < 0.8:
        labels["ray.io/node-type"] = rng.choice(("head", "worker"))
    return labels


def brute_force(
    stored: dict[str, dict[str, Any]], namespace: str | None, selector: LabelSelector
) -> list[str]:
    return sorted(
        key
        for key, o in stored.items()
        if (namespace is None or o["metadata"]["namespace"] == namespace)
        and selector.matches(o["metadata"].get("labels"))
    )


def keys_of(objs: list[Any]) -> list[str]:
    return sorted(object_key(o) for o in objs)


@pytest.mark.parametrize("server_only", [frozenset(), frozenset({"ray.io/node-type"})])
@pytest.mark.parametrize("seed", range(6))
def test_labelled_lists_equal_a_full_scan_through_puts_relabels_and_removes(
    seed: int, server_only: frozenset[str]
) -> None:
    rng = random.Random(seed)
    indexer = Indexer(server_only_labels=server_only)
    stored: dict[str, dict[str, Any]] = {}
    for step in range(600):
        roll = rng.random()
        if roll < 0.6 or not stored:
            o = obj(rng.choice(NAMESPACES), f"p{rng.randrange(60)}", random_labels(rng), step)
            indexer.put(o)
            stored[object_key(o)] = o
        else:
            key = rng.choice(sorted(stored))
            indexer.remove(key)
            del stored[key]
        if step % 7 == 0:
            selector = as_label_selector(rng.choice(SELECTORS))
            namespace = rng.choice((None, *NAMESPACES))
            assert keys_of(indexer.list_selected(namespace, selector)) == brute_force(
                stored, namespace, selector
            )
    for text in SELECTORS:
        for namespace in (None, *NAMESPACES):
            selector = as_label_selector(text)
            found = indexer.list_selected(namespace, selector)
            assert keys_of(found) == brute_force(stored, namespace, selector)
            for cached in found:
                assert cached == stored[object_key(cached)]


def test_a_labelled_list_reads_only_the_labelled_objects() -> None:
    indexer = Indexer()
    for i in range(2_000):
        labels = {"ray.io/cluster": f"c{i // 4}", "ray.io/node-type": "worker"}
        indexer.put(obj("default", f"p{i}", labels, i))
    asked: list[object] = []
    original = LabelSelector.matches

    def counting(self: LabelSelector, labels: Any) -> bool:
        asked.append(labels)
        return original(self, labels)

    selector = as_label_selector({"ray.io/cluster": "c7"})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LabelSelector, "matches", counting)
        found = indexer.list_selected("default", selector)
    assert keys_of(found) == sorted(f"default/p{i}" for i in range(28, 32))
    assert len(asked) == 4


def test_label_indexes_stop_at_the_limit_and_lists_stay_right(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(indexer_module, "MAX_LABEL_INDEXES", 2)
    indexer = Indexer()
    for i in range(30):
        indexer.put(obj("default", f"p{i}", {f"k{i % 4}": "v", "all": str(i % 3)}, i))
    for key in ("k0", "k1", "k2", "k3", "all"):
        found = indexer.list_selected("default", as_label_selector({key: "v"}))
        expected = [i for i in range(30) if key != "all" and i % 4 == int(key[1])]
        assert keys_of(found) == sorted(f"default/p{i}" for i in expected)
    assert len(indexer._label_indices) == 2


def test_server_only_labels_are_not_kept_beside_the_blob_but_selections_on_them_stay_right() -> None:
    indexer = Indexer(server_only_labels=frozenset({"shard", "root"}))
    indexer.put(obj("default", "rc", {"shard": "r0"}, 1))
    indexer.put(obj("default", "pod", {"ray.io/cluster": "rc", "shard": "r0", "root": "u1"}, 2))
    indexer.put(obj("other", "pod", {"ray.io/cluster": "rc", "shard": "r1", "root": "u2"}, 3))
    assert indexer._entries["default/rc"].labels is None
    assert dict(indexer._entries["default/pod"].labels or {}) == {"ray.io/cluster": "rc"}
    # The objects handed out still carry every label.
    assert (indexer.get("default/pod") or {})["metadata"]["labels"]["root"] == "u1"
    for text, namespace, expected in [
        ("shard=r0", None, ["default/pod", "default/rc"]),
        ("shard=r0", "other", []),
        ("root in (u1,u2),ray.io/cluster=rc", None, ["default/pod", "other/pod"]),
        ("!root", "default", ["default/rc"]),
        ("ray.io/cluster=rc", "other", ["other/pod"]),
    ]:
        assert keys_of(indexer.list_selected(namespace, as_label_selector(text))) == expected, text
    assert "shard" not in indexer._label_indices and "root" not in indexer._label_indices
