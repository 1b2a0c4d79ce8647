"""Label and field selector parsing and matching."""

from __future__ import annotations

import pytest

from rayop.sim.machinery.selectors import (
    SelectorError,
    label_selector_from_dict,
    parse_field_selector,
    parse_label_selector,
)


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("a=b", {"a": "b"}, True),
        ("a==b", {"a": "c"}, False),
        ("a!=b", {}, True),
        ("a!=b", {"a": "b"}, False),
        ("a in (x, y)", {"a": "y"}, True),
        ("a notin (x,y)", {"a": "z"}, True),
        ("a notin (x,y)", {}, True),
        ("a", {"a": ""}, True),
        ("!a", {"a": "1"}, False),
        ("a=b,c in (d),!e", {"a": "b", "c": "d"}, True),
        ("ray.io/node-type=worker", {"ray.io/node-type": "worker"}, True),
        ("", {"x": "y"}, True),
    ],
)
def test_label_selector(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(text).matches(labels) is expected


def test_bad_label_selectors_raise() -> None:
    for bad in ("a in (x", "a b", "!a in (x)"):
        with pytest.raises(SelectorError):
            parse_label_selector(bad)


def test_label_selector_from_dict_forms() -> None:
    sel = label_selector_from_dict(
        {"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "c", "operator": "Exists"}]}
    )
    assert sel.matches({"a": "b", "c": "1"}) and not sel.matches({"a": "b"})
    assert label_selector_from_dict({"app": "x"}).matches({"app": "x"})


def test_field_selector_paths() -> None:
    obj = {
        "metadata": {"name": "p", "namespace": "d"},
        "status": {"phase": "Running"},
        "spec": {"nodeName": "n1"},
        "involvedObject": {"uid": "u"},
    }
    assert parse_field_selector("metadata.name=p,status.phase==Running").matches(obj)
    assert parse_field_selector("spec.nodeName!=n2").matches(obj)
    assert not parse_field_selector("metadata.namespace=x").matches(obj)
    assert parse_field_selector("involvedObject.uid=u").matches(obj)
    assert parse_field_selector("spec.nodeName=").matches({"spec": {}})
    assert parse_field_selector("metadata.name=p").exact_name() == "p"
    with pytest.raises(SelectorError):
        parse_field_selector("nonsense")
