"""A pod's service account, as the kubelet gives it: the token files and ``KUBERNETES_SERVICE_*``.

On a cluster the ServiceAccount admission plugin adds a projected ``kube-api-access-*`` volume
(a bound token, the cluster's ``ca.crt``, the pod's namespace) mounted read-only at
:data:`SERVICE_ACCOUNT_DIR` in every container, unless ``automountServiceAccountToken`` is false
on the pod or else on its ServiceAccount, and every container gets ``KUBERNETES_SERVICE_HOST``
and ``KUBERNETES_SERVICE_PORT`` (and ``_HTTPS``) naming the API server. Under ``--real-ray``
the kubelet writes those files into the pod's directory itself (the pod object stays as
created) with a token the plane's RBAC authenticates as
``system:serviceaccount:<namespace>:<name>``, and points the variables at the plane's HTTPS
endpoint. A pod's 127.0.0.1 is the pod itself (the loopback shim turns it into the pod's
address), so a plane on 127.0.0.1 also listens on :data:`POD_API_HOST` for them, the
``kubernetes`` Service's address as pods see it.
See https://kubernetes.io/docs/tasks/configure-pod-container/configure-service-account/
and https://kubernetes.io/docs/concepts/services-networking/connect-applications-service/#environment-variables
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rayop.apimachinery.objects import Obj

__all__ = [
    "POD_API_HOST",
    "SERVICE_ACCOUNT_DIR",
    "PlaneEndpoint",
    "automounts",
    "kube_env",
    "pod_api_host",
    "write_token_files",
]

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
POD_API_HOST = "127.0.0.2"
"""Where pods reach a plane that listens on loopback (never a pod IP: those are 127.16-250.*)."""


@dataclass(frozen=True)
class PlaneEndpoint:
    """Where the pods reach the plane's API server, and how a pod gets its token.

    Attributes:
        host: The address the API server listens on (a loopback address).
        port: Its port.
        ca_data: Its CA certificate, base64 PEM (kubeconfig form); "" when it serves plain HTTP.
        issue_token: ``(namespace, service account) -> token``; raises the API's StatusError
            (404) when the ServiceAccount does not exist.
    """

    host: str
    port: int
    ca_data: str
    issue_token: Callable[[str, str], str]


def service_account_name(pod: Obj) -> str:
    """The pod's ServiceAccount (``default`` when it names none)."""
    spec = pod.get("spec") or {}
    return str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "default")


def automounts(pod: Obj, account: Obj | None) -> bool:
    """Tells whether the token is mounted: the pod's setting, else its ServiceAccount's, else yes."""
    own = (pod.get("spec") or {}).get("automountServiceAccountToken")
    if own is not None:
        return bool(own)
    inherited = (account or {}).get("automountServiceAccountToken")
    return True if inherited is None else bool(inherited)


def write_token_files(directory: Path, token: str, ca_data: str, namespace: str) -> None:
    """Writes ``token``, ``ca.crt`` (when the plane has one) and ``namespace`` into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "token").write_text(token)
    (directory / "namespace").write_text(namespace)
    if ca_data:
        (directory / "ca.crt").write_bytes(base64.b64decode(ca_data))
    for path in directory.iterdir():
        path.chmod(0o644)


def pod_api_host(plane_host: str) -> str | None:
    """Where pods reach a plane bound to ``plane_host``; None when it is ``plane_host`` itself.

    A plane on loopback (or on every address) is reached at :data:`POD_API_HOST`; one bound to
    another address, at that address.
    """
    if plane_host in ("127.0.0.1", "localhost"):
        return POD_API_HOST
    return None


def kube_env(endpoint: PlaneEndpoint) -> dict[str, str]:
    """The variables every container gets for the ``kubernetes`` Service (the plane)."""
    host = POD_API_HOST if endpoint.host in ("", "0.0.0.0", "::") else endpoint.host
    port = str(endpoint.port)
    proto = "tcp"
    address = f"[{host}]" if ":" in host else host
    return {
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": port,
        "KUBERNETES_SERVICE_PORT_HTTPS": port,
        "KUBERNETES_PORT": f"{proto}://{address}:{port}",
    }
