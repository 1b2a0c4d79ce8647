"""The embedded control plane's conformance suite (tests/conformance), run unchanged against the
real kube-apiserver.

The suite's modules are loaded here under private names and their test functions and fixtures
re-exported, so pytest collects them a second time in this module; only the ``kubeconfig``
fixture is overridden, to point at the session's real control plane. The suite's own
``RAYOP_CONFORMANCE_KUBECONFIG`` switch is set too, so tests that accept a real server's
discretion (bookmarks) take that branch.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance"
SUITE = sorted(p.stem for p in CONFORMANCE.glob("test_*.py"))

pytestmark = [pytest.mark.real, pytest.mark.timeout(120, func_only=True)]


def _load(name: str, suite_conftest: ModuleType | None) -> ModuleType:
    """Executes tests/conformance/<name>.py as a fresh module (its ``conftest`` is the suite's)."""
    if str(CONFORMANCE) not in sys.path:
        sys.path.insert(0, str(CONFORMANCE))  # kubehttp, status_shape
    spec = importlib.util.spec_from_file_location(
        f"_real_conformance_{name}", CONFORMANCE / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved = sys.modules.get("conftest")
    if suite_conftest is not None:
        sys.modules["conftest"] = suite_conftest
    try:
        spec.loader.exec_module(module)
    finally:
        if saved is not None:
            sys.modules["conftest"] = saved
        else:
            sys.modules.pop("conftest", None)
    return module


_suite_conftest = _load("conftest", None)
kube = _suite_conftest.kube
ns = _suite_conftest.ns
gizmos = _suite_conftest.gizmos

KNOWN_DIFFERENCES: dict[str, str] = {}
"""Suite tests that fail on a real kube-apiserver by nature; strict xfail, so a change shows."""

for _name in SUITE:
    _module = _load(_name, _suite_conftest)
    for _attr, _value in vars(_module).items():
        if _attr.startswith("test_") and callable(_value):
            if _attr in KNOWN_DIFFERENCES:
                _value = pytest.mark.xfail(strict=True, reason=KNOWN_DIFFERENCES[_attr])(_value)
            globals()[f"{_attr}__{_name.removeprefix('test_')}"] = _value


@pytest.fixture
def kubeconfig(real_kubeconfig: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The real control plane's kubeconfig, in place of the suite's embedded server."""
    monkeypatch.setenv("RAYOP_CONFORMANCE_KUBECONFIG", real_kubeconfig)
    return real_kubeconfig
