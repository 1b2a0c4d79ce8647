"""src/rayop/api/k8s_openapi.json is what the real tier's kube-apiserver publishes.

The CRDs' embedded Kubernetes schemas come from that file; ``scripts/gen-k8s-openapi --check``
reads /openapi/v3 of the session's apiserver and fails when the committed file differs (a new
Kubernetes release: regenerate it, then rerun tests/api/test_crds.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.real, pytest.mark.timeout(120, func_only=True)]

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gen-k8s-openapi"


def test_the_committed_kubernetes_schemas_are_the_apiservers(real_kubeconfig: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--kubeconfig", real_kubeconfig, "--check"],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
