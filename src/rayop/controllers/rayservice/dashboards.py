"""Builds the dashboard clients a RayService pass uses to reach a cluster's head.

Directly at ``http://<head service>.<namespace>.svc.<cluster domain>:<port>`` (KubeRay's
default) or through the API server's services proxy (KubeRay's ``--use-kubernetes-proxy``).
"""

from __future__ import annotations

from rayop.controllers.dashboard.client import DashboardClient
from rayop.controllers.dashboard.transport import ServiceResolver
from rayop.kube.client import KubeClient


class DashboardFactory:
    """Builds dashboard clients for a RayCluster's head (through the API server or directly).

    Args:
        kube: The operator's API client (used by the services proxy).
        use_kubernetes_proxy: Go through ``services/<svc>:<port>/proxy`` (KubeRay's
            ``--use-kubernetes-proxy``); otherwise ``http://<svc FQDN>:<port>``.
        cluster_domain: DNS domain of direct URLs.
        resolver: Maps direct URLs where cluster DNS does not resolve them (None: DNS does).
    """

    def __init__(
        self,
        kube: KubeClient,
        *,
        use_kubernetes_proxy: bool,
        cluster_domain: str,
        resolver: ServiceResolver | None = None,
    ) -> None:
        self.kube = kube
        self.use_kubernetes_proxy = use_kubernetes_proxy
        self.cluster_domain = cluster_domain
        self.resolver = resolver

    def client(
        self, *, namespace: str, service: str, port_name: str, port: int, token: str | None = None
    ) -> DashboardClient:
        """Returns a client for one port of a head service; the caller closes it."""
        if self.use_kubernetes_proxy:
            return DashboardClient.via_proxy(
                self.kube, namespace=namespace, service=service, port=port_name, token=token
            )
        url = f"http://{service}.{namespace}.svc.{self.cluster_domain}:{port}"
        return DashboardClient.direct(url, token=token, resolver=self.resolver)
