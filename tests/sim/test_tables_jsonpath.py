"""The JSONPath subset of CRD printer columns, with the equality filters the Gateway API's use."""

from __future__ import annotations

import pytest

from rayop.sim.apiserver.tables import jsonpath_values

GATEWAY = {
    "spec": {"listeners": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]},
    "status": {
        "addresses": [{"value": "10.0.0.1"}],
        "conditions": [
            {"type": "Accepted", "status": "True", "observedGeneration": 2},
            {"type": "Programmed", "status": "False"},
        ],
    },
}


@pytest.mark.parametrize(
    ("path", "values"),
    [
        (".status.addresses[*].value", ["10.0.0.1"]),
        ('.status.conditions[?(@.type=="Programmed")].status', ["False"]),
        (".status.conditions[?(@.type=='Accepted')].observedGeneration", [2]),
        ('.status.conditions[?(@.type=="Ready")].status', []),
        ('.spec.listeners[?(@.port=="443")].name', ["https"]),
        ("{.spec.listeners[0].name}", ["http"]),
    ],
)
def test_paths(path: str, values: list[object]) -> None:
    assert jsonpath_values(GATEWAY, path) == values
