"""Real Helm for the chart tests: where the binary is, ``helm lint`` and ``helm template``.

Helm v3.22.0 is built by ``scripts/controlplane-build helm`` into
``~/.cache/rayop/helm/v3.22.0/helm`` (``RAYOP_CACHE_DIR`` moves the cache). The fast tier uses it
when it is there and skips, saying how to build it, when it is not; the real tier builds it and
fails without it. Values are handed to helm as a YAML file, as a user's ``-f values.yaml``.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "helm" / "rayop"
HELM_VERSION = "v3.22.0"
RELEASE = "rayop"
NAMESPACE = "rayop-system"

Obj = dict[str, Any]


class HelmError(Exception):
    """helm exited non-zero; the message is its stderr."""


def helm_path() -> Path:
    """Returns where scripts/controlplane-build puts the helm binary (it may not exist)."""
    cache = os.environ.get("RAYOP_CACHE_DIR") or os.path.expanduser("~/.cache/rayop")
    return Path(cache) / "helm" / HELM_VERSION / "helm"


def missing_helm_reason() -> str:
    """Returns why helm cannot be used here, or "" when it can."""
    path = helm_path()
    if path.is_file() and os.access(path, os.X_OK):
        return ""
    return f"helm {HELM_VERSION} is not built at {path}: run `scripts/controlplane-build helm`"


def run_helm(*args: str, values: Mapping[str, Any] | None = None) -> str:
    """Runs helm with ``args`` (and ``values`` as ``-f``); returns stdout.

    Raises:
        HelmError: helm exited non-zero (its stderr is the message).
    """
    with tempfile.TemporaryDirectory(prefix="rayop-helm-") as tmp:
        argv = [str(helm_path()), *args]
        if values:
            path = Path(tmp) / "values.yaml"
            path.write_text(yaml.safe_dump(dict(values), sort_keys=False))
            argv += ["-f", str(path)]
        env = {**os.environ, "HELM_CACHE_HOME": tmp, "HELM_CONFIG_HOME": tmp, "HELM_DATA_HOME": tmp}
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    if proc.returncode != 0:
        raise HelmError(proc.stderr.strip())
    return proc.stdout


def lint(values: Mapping[str, Any] | None = None, chart: Path = CHART) -> str:
    """Runs ``helm lint --strict`` on ``chart`` with ``values``; returns its report."""
    return run_helm("lint", "--strict", str(chart), values=values)


def template_text(
    values: Mapping[str, Any] | None = None,
    *,
    release: str = RELEASE,
    namespace: str = NAMESPACE,
    chart: Path = CHART,
) -> str:
    """Returns what ``helm template`` renders (the CRDs are not included).

    Renders are remembered by their arguments (the chart does not change during a test run).
    """
    key = (yaml.safe_dump(dict(values or {})), release, namespace, str(chart))
    if key not in _RENDERED:
        args = ("template", release, str(chart), "--namespace", namespace)
        _RENDERED[key] = run_helm(*args, values=values)
    return _RENDERED[key]


_RENDERED: dict[tuple[str, str, str, str], str] = {}


def template(
    values: Mapping[str, Any] | None = None,
    *,
    release: str = RELEASE,
    namespace: str = NAMESPACE,
    chart: Path = CHART,
) -> list[Obj]:
    """Returns the objects ``helm template`` renders for ``chart`` with ``values``."""
    text = template_text(values, release=release, namespace=namespace, chart=chart)
    return [doc for doc in yaml.safe_load_all(text) if doc]


def deployment_container(objects: list[Obj]) -> Obj:
    """Returns the operator container of the one rendered Deployment."""
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    containers: list[Obj] = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1, [c["name"] for c in containers]
    return containers[0]


def by_kind(objects: list[Obj], kind: str) -> list[Obj]:
    """Returns the rendered objects of ``kind``."""
    return [o for o in objects if o["kind"] == kind]
