"""The embedded control plane's conformance suite (tests/conformance), run unchanged against the
real kube-apiserver.

The suite's test functions and fixtures are imported from its package and re-exported, so pytest
collects them a second time in this module; only the ``kubeconfig`` fixture is overridden, to
point at the session's real control plane. The suite's own ``RAYOP_CONFORMANCE_KUBECONFIG``
switch is set too, so tests that accept a real server's discretion (bookmarks) take that branch.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import FunctionType

import pytest

from tests.conformance.conftest import gizmos, kube, ns

CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance"
SUITE = sorted(p.stem for p in CONFORMANCE.glob("test_*.py"))

pytestmark = [pytest.mark.real, pytest.mark.timeout(120, func_only=True)]

__all__ = ["gizmos", "kube", "ns"]  # the suite's fixtures, re-exported for its tests here


def _own_copy(test: object) -> FunctionType:
    """A copy of a suite test, to mark here without marking the suite's own (shared) function."""
    assert isinstance(test, FunctionType), f"{test!r}: only plain test functions are copied"
    copy = FunctionType(
        test.__code__, test.__globals__, test.__name__, test.__defaults__, test.__closure__
    )
    copy.__kwdefaults__ = test.__kwdefaults__
    copy.__qualname__ = test.__qualname__
    copy.__dict__.update(test.__dict__)  # the suite's own marks and parameters
    return copy


KNOWN_DIFFERENCES: dict[str, str] = {}
"""Suite tests that fail on a real kube-apiserver by nature; strict xfail, so a change shows."""

for _name in SUITE:
    _module = importlib.import_module(f"tests.conformance.{_name}")
    for _attr, _value in vars(_module).items():
        if _attr.startswith("test_") and callable(_value):
            if _attr in KNOWN_DIFFERENCES:
                _mark = pytest.mark.xfail(strict=True, reason=KNOWN_DIFFERENCES[_attr])
                _value = _mark(_own_copy(_value))
            globals()[f"{_attr}__{_name.removeprefix('test_')}"] = _value


@pytest.fixture
def kubeconfig(real_kubeconfig: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The real control plane's kubeconfig, in place of the suite's embedded server."""
    monkeypatch.setenv("RAYOP_CONFORMANCE_KUBECONFIG", real_kubeconfig)
    return real_kubeconfig
