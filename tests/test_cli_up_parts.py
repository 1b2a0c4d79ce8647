"""The parts ``rayop up`` starts with: the kubeconfig file, the CRDs' Established check, the
one-line bind error."""

from __future__ import annotations

import errno
import stat
from pathlib import Path

from rayop.cli.bind_errors import API_SERVER, as_bind_error, bind_error_line
from rayop.cli.crd_install import is_established
from rayop.cli.kubeconfig_file import PublishedFile, write_atomically
from rayop.runtime.serving.endpoints import BindError


def test_write_atomically_leaves_only_the_whole_file_readable_by_its_owner(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "kubeconfig.yaml"
    write_atomically(path, "first\n")
    write_atomically(path, "second\n")
    assert path.read_text() == "second\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["kubeconfig.yaml"]


def test_a_published_file_is_withdrawn_only_if_this_process_wrote_it(tmp_path: Path) -> None:
    users = tmp_path / "users.yaml"
    users.write_text("mine\n")
    PublishedFile(users).withdraw()
    assert users.read_text() == "mine\n"
    ours = PublishedFile(tmp_path / "ours.yaml")
    ours.publish("kubeconfig\n")
    assert ours.path.read_text() == "kubeconfig\n"
    ours.withdraw()
    assert not ours.path.exists()


def test_a_crd_is_established_only_with_a_true_established_condition() -> None:
    def crd(*conditions: tuple[str, str]) -> dict[str, object]:
        return {"status": {"conditions": [{"type": t, "status": s} for t, s in conditions]}}

    assert is_established(crd(("NamesAccepted", "True"), ("Established", "True")))
    assert not is_established(crd(("NamesAccepted", "True"), ("Established", "False")))
    assert not is_established(crd(("NamesAccepted", "True")))
    assert not is_established({"metadata": {"name": "rayservices.ray.io"}})


def test_a_bind_failure_is_one_line_naming_the_flag() -> None:
    in_use = OSError(errno.EADDRINUSE, "error while attempting to bind ...: address in use")
    metrics = BindError("metrics", "0.0.0.0", 8080, in_use)
    assert bind_error_line(metrics) == (
        "rayop: the metrics server cannot listen on 0.0.0.0:8080 (address already in use): "
        "change --metrics-addr (0 disables it)"
    )
    webhook = BindError("webhook", "::", 9443, in_use)
    assert bind_error_line(webhook).endswith(
        "on [::]:9443 (address already in use): change --webhook-port"
    )
    plane = as_bind_error(in_use, API_SERVER, "127.0.0.1", 6443)
    assert plane is not None and isinstance(plane, OSError)
    assert "--port" in bind_error_line(plane)
    assert as_bind_error(PermissionError(errno.EACCES, "state dir"), API_SERVER, "h", 1) is None
    assert as_bind_error(metrics, API_SERVER, "h", 1) is metrics
