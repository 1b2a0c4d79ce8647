"""Field selector parsing and matching (label selectors: tests/apimachinery/test_labels.py)."""

from __future__ import annotations

import pytest

from rayop.apimachinery.labels import SelectorError
from rayop.sim.machinery.field_selectors import parse_field_selector


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
