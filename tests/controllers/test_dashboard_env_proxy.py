"""Direct dashboard calls honour HTTP_PROXY / NO_PROXY as Go's ProxyFromEnvironment does."""

from __future__ import annotations

import pytest

from rayop.controllers.dashboard.transport import env_proxy

HEAD = "http://job-head-svc.ns.svc.cluster.local:8265"


def test_no_proxy_variables_mean_no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert env_proxy(HEAD) is None


def test_http_proxy_is_used_except_for_no_proxy_and_loopback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:3128")
    monkeypatch.setenv("NO_PROXY", "other.svc.cluster.local")
    assert env_proxy(HEAD) == "http://127.0.0.1:3128"
    assert env_proxy("http://x.other.svc.cluster.local:8265") is None
    assert env_proxy("http://127.0.0.1:8265") is None
    assert env_proxy("http://localhost:8265") is None
    monkeypatch.setenv("NO_PROXY", "cluster.local")  # a new value is read at once
    assert env_proxy(HEAD) is None
