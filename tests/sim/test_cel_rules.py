"""cel_rules, cel_library and cel_cost without a server: the functions Kubernetes adds, error
wording, optionalOldSelf, list-map correlation for transition rules, the cost shape."""

from __future__ import annotations

from typing import Any

from rayop.sim.admission.cel_cost import estimate, shape_of
from rayop.sim.admission.cel_rules import check_rules


def _schema(rules: list[dict[str, Any]], **node: Any) -> dict[str, Any]:
    spec = {"type": "object", "x-kubernetes-validations": rules, **node}
    return {"type": "object", "properties": {"spec": spec}}


def _check(rule: str, spec: Any, old_spec: Any = None, **extra: Any) -> list[tuple[str, str, str]]:
    schema = _schema([{"rule": rule, **extra}], properties={"s": {"type": "string"}})
    old = None if old_spec is None else {"spec": old_spec}
    return check_rules(schema, {"spec": spec}, old)


def test_kubernetes_string_and_list_functions() -> None:
    for rule in (
        "self.s.lowerAscii() == 'ab-c'",
        "self.s.upperAscii() == 'AB-C'",
        "self.s.split('-') == ['aB', 'c']",
        "self.s.indexOf('-') == 2 && self.s.lastIndexOf('c') == 3",
        "self.s.replace('-', '+') == 'aB+c' && self.s.substring(1, 3) == 'B-'",
        "' x '.trim() == 'x' && ['a', 'b'].join('/') == 'a/b' && self.s.charAt(0) == 'a'",
        "[1, 2, 3].isSorted() && [1, 2].sum() == 3 && [4, 2].min() == 2 && [4, 2].max() == 4",
    ):
        assert _check(rule, {"s": "aB-c"}) == [], rule


def test_evaluation_errors_use_kube_apiservers_wording() -> None:
    ((where, reason, said),) = _check("self.missing == 'x'", {"s": "a"})
    assert (where, reason) == ("spec", "FieldValueInvalid")
    assert (
        said
        == "Invalid value: \"object\": no such key: missing evaluating rule: self.missing == 'x'"
    )
    ((_, _, said),) = _check("self.s + 1 == 2", {"s": "a"}, message="needs a number")
    assert said == (
        "Invalid value: \"object\": 'no such overload': call arguments did not match a supported "
        "operator, function or macro signature for rule: needs a number"
    )


def test_transition_rules_skip_creates_unless_old_self_is_optional() -> None:
    assert _check("self.s == oldSelf.s", {"s": "a"}) == []
    assert _check("self.s == oldSelf.s", {"s": "a"}, {"s": "b"}) != []
    optional = {"optionalOldSelf": True}
    rule = "!oldSelf.hasValue() || oldSelf.value().s == self.s"
    assert _check(rule, {"s": "a"}, **optional) == []
    assert _check(rule, {"s": "a"}, {"s": "b"}, **optional) != []
    assert _check("oldSelf.hasValue()", {"s": "a"}, **optional) != []


def test_list_map_items_correlate_by_key_and_atomic_list_items_do_not() -> None:
    item = {"type": "object", "x-kubernetes-validations": [{"rule": "self.v == oldSelf.v"}]}
    keyed = {
        "type": "array",
        "items": item,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["k"],
    }
    atomic = {"type": "array", "items": item}
    for node, refused in ((keyed, True), (atomic, False)):
        schema = {
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {"l": node}}},
        }
        old = {"spec": {"l": [{"k": "a", "v": 1}, {"k": "b", "v": 2}]}}
        new = {"spec": {"l": [{"k": "b", "v": 2}, {"k": "a", "v": 5}]}}
        causes = check_rules(schema, new, old)
        assert [c[0] for c in causes] == (["spec.l[1]"] if refused else [])


def test_the_cost_shape_counts_nested_comprehensions_and_skips_string_literals() -> None:
    assert shape_of("self.all(a, self.exists(b, a == b))").loop_depth == 2
    assert shape_of("self.all(a, a > 0) && self.all(b, b < 9)").loop_depth == 1
    assert shape_of("'.all(x, .all(y' == self").loop_depth == 0
    assert not shape_of("self == oldSelf").string_work
    wide = list(range(150))
    assert estimate(shape_of("self.all(a, self.all(b, self.all(c, a != b)))"), wide) > 1_000_000
    assert estimate(shape_of("self.all(a, a >= 0)"), wide) < 10_000


def test_a_failed_rule_shows_a_scalar_value_as_go_prints_it_and_omits_objects() -> None:
    def node(type_name: str) -> dict[str, Any]:
        return {"type": type_name, "x-kubernetes-validations": [{"rule": "false", "message": "no"}]}

    props = {"i": node("integer"), "f": node("number"), "b": node("boolean"), "s": node("string")}
    props["o"] = node("object")
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}
    spec = {"i": 5, "f": 2.0, "b": True, "s": 'say "hi"', "o": {}}
    shown = {c[0]: c[2] for c in check_rules(schema, {"spec": spec}, None)}
    assert shown == {
        "spec.i": "Invalid value: 5: no",
        "spec.f": "Invalid value: 2: no",
        "spec.b": "Invalid value: true: no",
        "spec.s": 'Invalid value: "say \\"hi\\"": no',
        "spec.o": "Invalid value: no",
    }
