"""Label selectors: the string form, metav1.LabelSelector, plain maps, matching."""

from __future__ import annotations

import pytest

from rayop.apimachinery.labels import (
    LabelSelector,
    Requirement,
    SelectorError,
    as_label_selector,
    format_selector,
    label_selector_from_dict,
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
        ("!a", {}, True),
        ("a=b,c in (d),!e", {"a": "b", "c": "d"}, True),
        (" a = b , , c ", {"a": "b", "c": "1"}, True),
        ("ray.io/node-type=worker", {"ray.io/node-type": "worker"}, True),
        ("a=", {"a": ""}, True),
        ("", {"x": "y"}, True),
    ],
)
def test_label_selector(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(text).matches(labels) is expected


def test_bad_label_selectors_raise() -> None:
    for bad in ("a in (x", "a b", "!a in (x)", "a=b=c"):
        with pytest.raises(SelectorError):
            parse_label_selector(bad)


def test_equality_is_a_one_value_set() -> None:
    """``k=v`` is ``k in (v)``: the informer's indexer looks up the values of ``in``."""
    assert parse_label_selector("a=b,c!=d,e,!f").requirements == (
        Requirement("a", "in", frozenset({"b"})),
        Requirement("c", "notin", frozenset({"d"})),
        Requirement("e", "exists"),
        Requirement("f", "!exists"),
    )


def test_label_selector_from_dict_forms() -> None:
    sel = label_selector_from_dict(
        {"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "c", "operator": "Exists"}]}
    )
    assert sel.matches({"a": "b", "c": "1"}) and not sel.matches({"a": "b"})
    assert label_selector_from_dict({"app": "x"}).matches({"app": "x"})
    expressions = [
        {"key": "k", "operator": "In", "values": ["1", "2"]},
        {"key": "n", "operator": "NotIn", "values": ["x"]},
        {"key": "gone", "operator": "DoesNotExist"},
    ]
    sel = label_selector_from_dict({"matchExpressions": expressions})
    assert sel.matches({"k": "2"}) and not sel.matches({"k": "3"})
    assert not sel.matches({"k": "1", "n": "x"}) and not sel.matches({"k": "1", "gone": ""})
    assert label_selector_from_dict(None).empty and label_selector_from_dict({}).empty
    with pytest.raises(SelectorError):
        label_selector_from_dict({"matchExpressions": [{"key": "k", "operator": "Near"}]})


def test_objects_are_matched_by_their_labels() -> None:
    sel = parse_label_selector("app=x")
    assert sel.matches_object({"metadata": {"labels": {"app": "x"}}})
    assert not sel.matches_object({"metadata": {}})
    assert LabelSelector().matches_object({}) and LabelSelector().matches(None)


def test_the_informer_forms() -> None:
    """A selector may come as a string, a map or a parsed one; the map form is sorted."""
    parsed = parse_label_selector("b=2")
    assert as_label_selector(parsed) is parsed
    assert as_label_selector(None) == LabelSelector() == as_label_selector("")
    from_map = as_label_selector({"b": "2", "a": "1"})
    assert [r.key for r in from_map.requirements] == ["a", "b"]
    assert from_map == as_label_selector("a=1,b=2")
    assert format_selector({"b": "2", "a": "1"}) == "a=1,b=2"
    assert format_selector("x in (1)") == "x in (1)" and format_selector(None) is None


def test_keys_and_values_are_checked_on_both_sides() -> None:
    """The operator's parser took any character but blanks and ``!=(),``; now both the
    operator and the embedded API server refuse what kube-apiserver refuses."""
    for bad in ("a=b:c", "k\u00e9=v", "a in (x,y):", "a;b"):
        with pytest.raises(SelectorError):
            as_label_selector(bad)
