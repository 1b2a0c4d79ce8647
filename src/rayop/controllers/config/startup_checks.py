"""The checks KubeRay v1.7 makes against the API server before it starts its controllers.

- ``SidecarSubmitterRestart`` on: the API server must be Kubernetes 1.35 or newer (the per
  container restart policy the sidecar submitter relies on is beta from 1.35); an older or
  unreadable version stops the operator, with KubeRay's messages.
- ``KubernetesWAS`` on: the API server must serve ``scheduling.k8s.io/v1alpha2`` (Workload and
  PodGroup; kube-apiserver serves it with ``--runtime-config=scheduling.k8s.io/v1alpha2=true``
  and the ``GenericWorkload`` feature gate), else the operator does not start.

``rayop run`` makes them (:func:`run_startup_checks`) and exits with status 1 on failure, as
KubeRay's ``exitOnError`` does.
"""

from __future__ import annotations

import json
import re

from rayop.controllers.config.options import OperatorOptions
from rayop.kube.client import KubeClient

__all__ = ["StartupCheckError", "parse_git_version", "run_startup_checks"]

WAS_GROUP_VERSION = "scheduling.k8s.io/v1alpha2"
WAS_PLUGIN = "kubernetes-was-v1alpha2"
_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")


class StartupCheckError(RuntimeError):
    """The API server cannot run the operator as configured; the operator exits."""


def parse_git_version(git_version: str) -> tuple[int, int, int]:
    """Returns (major, minor, patch) of a ``gitVersion`` such as ``v1.37.2`` or ``v1.35.0-gke.1``.

    Raises:
        ValueError: it does not start with a semantic version.
    """
    match = _VERSION.match(git_version)
    if match is None:
        raise ValueError(f"invalid semantic version {git_version!r}")
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


async def _server_version(client: KubeClient) -> str:
    status, body = await client.request("GET", "/version")
    if status != 200:
        raise StartupCheckError(
            "SidecarSubmitterRestart feature gate enabled but unable to detect K8s version. "
            f"Feature requires K8s 1.35+.: GET /version returned {status}"
        )
    return str(json.loads(body).get("gitVersion", ""))


async def run_startup_checks(client: KubeClient, options: OperatorOptions) -> None:
    """Makes KubeRay's startup checks for the gates ``options`` turn on; blocks on the API.

    Raises:
        StartupCheckError: a check failed (the message is KubeRay's).
    """
    gates = options.feature_gates
    if gates.sidecar_submitter_restart:
        version = await _server_version(client)
        try:
            at_least = parse_git_version(version)[:2] >= (1, 35)
        except ValueError as err:
            raise StartupCheckError(f"Failed to compare K8s version.: {err}") from err
        if not at_least:
            raise StartupCheckError(
                "SidecarSubmitterRestart feature gate requires K8s 1.35+: current version "
                f"{version} is below 1.35"
            )
    if gates.kubernetes_was:
        status, _ = await client.request("GET", f"/apis/{WAS_GROUP_VERSION}")
        if status != 200:
            raise StartupCheckError(
                "unable to create batch scheduler manager: no served scheduling.k8s.io API "
                f"version available for {WAS_PLUGIN}: {WAS_GROUP_VERSION} API is not "
                f"available: the server returned {status}"
            )
