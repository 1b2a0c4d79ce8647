"""What the tests of KubeRay's own tools share: where they are built, the S3 store's settings.

``scripts/controlplane-build kuberay-tools`` (``scripts/kuberay-tools-build``) builds KubeRay
v1.7.0's ``kubectl-ray``, ``historyserver`` and ``collector`` and the gofakes3 S3 server into
:func:`tools_dir`. The history server and the collector reach gofakes3 with :data:`S3_ENV` (its
S3 backend reads its settings from the environment); the server creates its bucket,
``ray-historyserver``, on start.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .real_support import build

__all__ = ["HISTORY_URL", "S3_ENV", "S3_URL", "build_tools", "stop", "tools_dir"]

KUBERAY_TOOLS_VERSION = "v1.7.0"
S3_URL = "http://127.0.0.1:9000"
HISTORY_URL = "http://127.0.0.1:8080"
"""The history server listens on :8080; it has no flag for it."""
S3_ENV = {
    "S3_ENDPOINT": S3_URL,
    "S3_REGION": "us-east-1",
    "S3FORCE_PATH_STYLE": "true",
    "S3DISABLE_SSL": "true",
    "AWS_ACCESS_KEY_ID": "rayop-test",
    "AWS_SECRET_ACCESS_KEY": "rayop-test",
}


def tools_dir() -> Path:
    """Where ``scripts/kuberay-tools-build`` puts the binaries."""
    cache = os.environ.get("RAYOP_CACHE_DIR") or os.path.expanduser("~/.cache/rayop")
    return Path(cache) / "kuberay-tools" / KUBERAY_TOOLS_VERSION


def build_tools() -> tuple[bool, str]:
    """Builds (or reuses) the tools; returns (ok, why-not)."""
    return build("kuberay-tools")


def stop(proc: subprocess.Popen[str], timeout: float = 30) -> None:
    """SIGTERMs ``proc`` (if it still runs) and waits, killing it after ``timeout`` seconds."""
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
