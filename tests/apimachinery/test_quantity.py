"""Kubernetes quantities: one parser, the canonical form, Go's JSON round trip, resource lists."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from rayop.apimachinery.quantity import (
    Quantity,
    QuantityError,
    container_requests,
    go_round_trip,
    parse_quantity,
    parse_resource_list,
    resource_list_json,
    scale_resource_list,
    sum_resource_lists,
)

GO_QUANTITIES: list[tuple[Any, str]] = json.loads(
    (Path(__file__).parents[1] / "controllers" / "data" / "kuberay_spec_hashes.json").read_text()
)["quantities"]
"""(value, the JSON Go writes for it), computed by Go's ``resource.Quantity``."""


@pytest.mark.parametrize(
    ("text", "value", "canonical"),
    [
        ("500m", 1, "500m"),
        ("1.5", 2, "1500m"),
        ("2Gi", 2 * 1024**3, "2Gi"),
        ("5120Mi", 5 * 1024**3, "5Gi"),
        ("40G", 40 * 10**9, "40G"),
        ("1000", 1000, "1k"),
        ("1e3", 1000, "1e3"),
        ("0", 0, "0"),
    ],
)
def test_quantities(text: str, value: int, canonical: str) -> None:
    q = Quantity.parse(text)
    assert q.int_value() == value
    assert q.canonical() == canonical


def test_quantity_sums_keep_first_format() -> None:
    assert (Quantity.parse("5Gi") + Quantity.parse("1Gi") * 2).canonical() == "7Gi"
    assert (Quantity.parse("1") + Quantity.parse("500m")).canonical() == "1500m"
    assert str(Quantity.parse("0") + Quantity.parse("2Gi") + Quantity.parse("200Mi")) == "2248Mi"
    assert str(Quantity.parse("500m").times(2)) == "1"
    with pytest.raises(ValueError):
        Quantity.parse("1 GB")


def test_exact_values() -> None:
    assert parse_quantity("500m") == Fraction(1, 2)
    assert parse_quantity("2Gi") == 2 * 2**30
    assert parse_quantity("1e3") == 1000 and parse_quantity("1.5k") == 1500
    assert parse_quantity(3) == 3
    assert parse_quantity(" +.5 ") == Fraction(1, 2) and parse_quantity("-1.") == -1
    for bad in ("lots", "", ".", "Mi", "1Xi", "1e", "1.5.5", None, True, [1], float("inf")):
        with pytest.raises(QuantityError):
            parse_quantity(bad)


@pytest.mark.parametrize(("given", "go_wrote"), GO_QUANTITIES)
def test_the_outputs_agree_on_what_go_wrote(given: Any, go_wrote: str) -> None:
    """Every helper reads the same value; the canonical forms agree where Go has no quirk."""
    value = parse_quantity(given)
    quantity = Quantity.parse(given)
    assert quantity.value == value
    assert go_round_trip(given) == go_wrote
    if given in ("1000E", "64Ei"):  # Go's quirks, pinned in test_where_the_outputs_differ
        return
    assert Quantity.parse(go_wrote).canonical() == quantity.canonical()
    assert abs(parse_quantity(go_wrote) - value) < Fraction(1, 10**9)


def test_where_the_outputs_differ() -> None:
    """The edge cases on which the four former implementations disagreed, each pinned."""
    # Above E, Go's writer finds no decimal suffix and drops it; the canonical form keeps E.
    assert go_round_trip("1000E") == "1"
    assert Quantity.parse("1000E").canonical() == "1000E"
    assert Quantity.parse("1000e18").canonical() == "1000e18"
    # Go caps a BinarySI value at the int64 maximum when it reads it; arithmetic does not.
    assert go_round_trip("64Ei") == "9223372036854775807"
    assert Quantity.parse("64Ei").canonical() == "64Ei"
    # Go's reader takes a suffix without digits as zero; the parser refuses it.
    assert go_round_trip("Mi") == "0"
    with pytest.raises(QuantityError):
        Quantity.parse("Mi")
    # A canonical text Go reads through its int64 path is kept verbatim by Go only.
    assert go_round_trip("007Gi") == "007Gi" and Quantity.parse("007Gi").canonical() == "7Gi"
    # A JSON number is read from its decimal text (the scheduler read 0.1 as a binary float).
    assert parse_quantity(0.1) == Fraction(1, 10) and go_round_trip(0.1) == "100m"
    # A negative sub-nano value rounds away from zero, as Go's parser rounds (the gang
    # schedulers' sums rounded it towards +infinity).
    assert Quantity(Fraction(-11, 2 * 10**9)).canonical() == "-6n"
    assert Quantity.parse("0.5n").canonical() == "1n" == go_round_trip("0.5n")
    # Only ASCII digits are digits.
    with pytest.raises(QuantityError):
        parse_quantity("\u0661")


def test_resource_lists() -> None:
    resources = parse_resource_list({"cpu": "500m", "memory": "2Gi"})
    doubled = scale_resource_list(resources, 2)
    total = sum_resource_lists([resources, doubled, parse_resource_list(None)])
    assert resource_list_json(total) == {"cpu": "1500m", "memory": "6Gi"}
    assert list(resource_list_json({"z": resources["cpu"], "a": resources["cpu"]})) == ["a", "z"]
    with pytest.raises(QuantityError):
        parse_resource_list({"cpu": "many"})


def test_container_requests() -> None:
    container = {
        "resources": {
            "requests": {"cpu": "1"},
            "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": 1},
        }
    }
    requests = container_requests(container)
    assert list(requests) == ["cpu", "memory", "nvidia.com/gpu"]
    assert resource_list_json(requests) == {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}
    assert container_requests({}) == {} == container_requests({"resources": ["not", "a", "map"]})


def test_container_requests_with_bad_values() -> None:
    hidden = {"resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "lots"}}}
    with pytest.raises(QuantityError):  # the operator: every value must be a quantity
        container_requests(hidden)
    assert container_requests(hidden, skip_invalid=True) == {"cpu": Quantity.parse("1")}
    # The scheduler leaves a bad value out; a bad request is not replaced by its limit.
    bad_request = {"resources": {"requests": {"cpu": "x", "memory": "1"}, "limits": {"cpu": "2"}}}
    assert container_requests(bad_request, skip_invalid=True) == {"memory": Quantity.parse("1")}
