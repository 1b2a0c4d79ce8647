"""What the real control plane is configured with so that kwok pods can play Ray heads.

kwok pods run no processes. The apiserver sends its pod-network traffic to a Unix socket
(:func:`pod_network_socket`) and kwok leaves K8sJobMode submitter pods running
(:func:`kwok_stages`), so that a test can answer for the heads and play the submitters.
"""

from __future__ import annotations

from pathlib import Path

import yaml

POD_NETWORK_SOCKET = "pod-network.sock"
"""The Unix socket, beside the kubeconfig, where the apiserver sends its pod-network traffic.

kwok pods run no processes, so nothing listens at a pod IP. The apiserver is started with an
egress selector that sends every "cluster" connection (the services/pods proxy, kubelet
calls) as an HTTP CONNECT request to this socket; whoever binds it (the real tier's simulated
Ray heads, ``tests/real/pod_network.py``) plays the pod network. Unbound, such calls fail
with 503 as they would against pods that do not answer."""
SUBMITTER_ENV = "RAY_JOB_SUBMISSION_ID"
"""kwok does not complete pods whose containers set this variable (K8sJobMode submitters):
the pod-network player submits their job to a simulated dashboard and completes them."""


def pod_network_socket(kubeconfig: Path) -> Path:
    """Returns the pod-network socket of the control plane that wrote ``kubeconfig``."""
    return kubeconfig.resolve().parent / POD_NETWORK_SOCKET


def kwok_stages(default_stages: str) -> str:
    """Returns kwok's default stages with ``pod-complete`` skipping submitter pods.

    Args:
        default_stages: The multi-document YAML ``scripts/controlplane-build`` assembled.
    """
    docs = [d for d in yaml.safe_load_all(default_stages) if d]
    for doc in docs:
        if doc.get("kind") == "Stage" and doc["metadata"]["name"] == "pod-complete":
            doc["spec"]["selector"]["matchExpressions"].append(
                {
                    "key": ".spec.containers[]?.env[]?.name",
                    "operator": "NotIn",
                    "values": [SUBMITTER_ENV],
                }
            )
    return yaml.safe_dump_all(docs, sort_keys=False)


def egress_selector_config(socket: Path) -> dict[str, object]:
    """Returns the apiserver's EgressSelectorConfiguration: "cluster" traffic (the services and
    pods proxy, kubelet calls) as HTTP CONNECT over the Unix socket ``socket``."""
    transport = {"uds": {"udsName": str(socket)}}
    return {
        "apiVersion": "apiserver.k8s.io/v1beta1",
        "kind": "EgressSelectorConfiguration",
        "egressSelections": [
            {
                "name": "cluster",
                "connection": {"proxyProtocol": "HTTPConnect", "transport": transport},
            }
        ],
    }


AUDIT_LOG = "audit.log"
"""The apiserver's audit log (JSON lines), in the control plane's ``logs`` directory."""


def audit_policy(*, reads: bool = False) -> dict[str, object]:
    """Returns the apiserver's audit Policy: every write request at Metadata level, once done.

    A test counts pod creates and RayCluster deletes from it (for example during a takeover:
    ``tests/real/test_takeover.py``); reads are not logged, to keep it small, unless ``reads``
    (the side-by-side benchmark breaks every client's requests down by verb and resource).
    """
    writes = ["create", "update", "patch", "delete", "deletecollection"]
    logged: dict[str, object] = {"level": "Metadata"}
    if not reads:
        logged["verbs"] = writes
    return {
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "omitStages": ["RequestReceived", "ResponseStarted"],
        "rules": [logged, {"level": "None"}],
    }
