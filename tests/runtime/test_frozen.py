"""freeze_decoded gives the same read-only tree as freeze_json, at about half the cost; the
informer cache uses it for what it is handed over."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rayop.runtime.informers.frozen import FrozenDict, FrozenList, freeze_decoded, freeze_json

from .kuberay_pods import kuberay_worker_pod

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=30,
)


def all_frozen(value: Any) -> bool:
    if isinstance(value, dict):
        return type(value) is FrozenDict and all(all_frozen(v) for v in value.values())
    if isinstance(value, list):
        return type(value) is FrozenList and all(all_frozen(v) for v in value)
    return True


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_freeze_decoded_equals_freeze_json_and_freezes_every_node(value: Any) -> None:
    raw = orjson.dumps(value)
    frozen = freeze_decoded(orjson.loads(raw))
    assert frozen == freeze_json(orjson.loads(raw)) == orjson.loads(raw)
    assert all_frozen(frozen)
    assert orjson.dumps(frozen) == raw


def test_a_decoded_pod_is_read_only_and_deep_copies_are_plain() -> None:
    pod = freeze_decoded(orjson.loads(orjson.dumps(kuberay_worker_pod("c1", 0))))
    with pytest.raises(TypeError):
        pod["metadata"]["labels"]["x"] = "y"
    with pytest.raises(TypeError):
        pod["spec"]["containers"].append({})
    with pytest.raises(TypeError):
        pod["spec"]["containers"][0]["env"][0].update(name="x")
    edited = copy.deepcopy(pod)
    edited["metadata"]["labels"]["x"] = "y"
    assert type(edited["spec"]["containers"]) is list and "x" not in pod["metadata"]["labels"]


def test_an_owned_put_stores_the_same_read_only_tree_as_a_copying_put() -> None:
    """``Indexer.put(owned=True)`` (the informer's watch events and LIST items) freezes the
    decoded object in place; what it stores and hands back equals a copying put's."""
    from rayop.runtime.informers.indexer import Indexer

    raw = orjson.dumps(kuberay_worker_pod("c1", 0))
    copying, owning = Indexer(decoded_cache_size=1), Indexer(decoded_cache_size=1)
    kept = orjson.loads(raw)
    stored, _ = copying.put(kept)
    kept["spec"]["rayopTestField"] = 7  # a copying put leaves the caller's object its own
    assert "rayopTestField" not in stored["spec"]
    given = orjson.loads(raw)
    handed, _ = owning.put(given, owned=True)
    assert handed == stored == orjson.loads(raw) and all_frozen(handed)
    assert handed["spec"] is given["spec"]  # frozen in place, not copied
    key = next(iter(owning))
    owning.put({"metadata": {"namespace": "x", "name": "evicts-the-pod"}}, owned=True)
    assert owning.get(key) == orjson.loads(raw)  # read back through the compact encoding
    assert all_frozen(owning.get(key))
