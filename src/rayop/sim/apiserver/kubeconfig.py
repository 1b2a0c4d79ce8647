"""The kubeconfig a client uses to reach the embedded API server: one cluster, user and context."""

from __future__ import annotations

from typing import Any

__all__ = ["CONTEXT_NAME", "kubeconfig_document"]

CONTEXT_NAME = "rayop-embedded"


def kubeconfig_document(
    server: str, token: str, *, ca_data: str | None = None, namespace: str = "default"
) -> dict[str, Any]:
    """Returns a kubeconfig (as a dict) with one cluster, user and context "rayop-embedded".

    Args:
        server: The API server URL.
        token: The bearer token.
        ca_data: Base64 PEM of the CA that signed an HTTPS server's certificate.
        namespace: The context's default namespace.
    """
    cluster: dict[str, Any] = {"server": server}
    if ca_data:
        cluster["certificate-authority-data"] = ca_data
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT_NAME, "cluster": cluster}],
        "users": [{"name": CONTEXT_NAME, "user": {"token": token}}],
        "contexts": [
            {
                "name": CONTEXT_NAME,
                "context": {"cluster": CONTEXT_NAME, "user": CONTEXT_NAME, "namespace": namespace},
            }
        ],
        "current-context": CONTEXT_NAME,
        "preferences": {},
    }
