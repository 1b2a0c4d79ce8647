"""The Kubernetes version the embedded plane reports: one constant for ``/version``, the OpenAPI
documents and the nodes' ``kubeletVersion``.

It is the version the plane serves: its built-in types, protobuf messages and OpenAPI come from
Kubernetes v1.37.2 (``k8s.io/api`` v0.37.2, ``scripts/gen-protobuf``, ``scripts/gen-k8s-openapi``),
its conformance suite runs against kube-apiserver v1.37.2 (``docs/known-differences.md``), and its
``--real-ray`` kubelet applies a container's own ``restartPolicy`` (container restart rules, beta
and on by default since 1.35:
https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#container-restart-rules), which
is what KubeRay's ``SidecarSubmitterRestart`` gate needs (it refuses servers older than 1.35).
"""

from __future__ import annotations

from typing import Final

__all__ = ["GIT_VERSION", "MAJOR", "MINOR", "PATCH"]

MAJOR: Final = 1
MINOR: Final = 37
PATCH: Final = 2
GIT_VERSION: Final = f"v{MAJOR}.{MINOR}.{PATCH}-rayop"
"""``gitVersion`` (a semantic version; the ``-rayop`` suffix names the build, as vendors do)."""
