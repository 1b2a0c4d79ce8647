"""The Ray auth token of a RayCluster with ``authOptions.mode: token``, as the operator's
dashboard clients send it.

One read for every controller that calls a head's dashboard (RayJob and RayService), as KubeRay
v1.7.0's one dashboard-client factory (``GetRayDashboardClientFunc`` in
``ray-operator/controllers/ray/utils/util.go``) reads it for both: the Secret
``authOptions.secretName`` or ``CheckName(<cluster>)``, key ``auth_token``.
"""

from __future__ import annotations

import base64
from typing import Final

from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit import names
from rayop.kube.errors import NotFound
from rayop.kube.object_client import ObjectClient
from rayop.kube.resources import SECRETS
from rayop.runtime.informers.cache_reader import CacheReader

AUTH_TOKEN_SECRET_KEY: Final = "auth_token"
"""The key of the token in the auth Secret (KubeRay's ``RAY_AUTH_TOKEN_SECRET_KEY``)."""


async def read_auth_token(
    cluster: Obj, *, secrets: CacheReader, client: ObjectClient
) -> str | None:
    """Returns the cluster's Ray auth token (token mode without K8s token auth), else None.

    The Secret is read from ``secrets`` (the cache), else from the API server (a Secret the
    RayCluster controller has just created); a Secret that does not exist (yet) gives None.
    Blocks on the API only when the cache does not hold the Secret.
    """
    if not cs.is_auth_enabled(cluster) or cs.is_k8s_token_auth(cluster):
        return None
    namespace, secret_name = cs.namespace(cluster), names.auth_secret_name(cluster)
    secret = secrets.get(namespace, secret_name)
    if secret is None:
        try:
            secret = await client.get(SECRETS, secret_name, namespace=namespace)
        except NotFound:
            return None
    encoded = (secret.get("data") or {}).get(AUTH_TOKEN_SECRET_KEY)
    return base64.b64decode(encoded).decode() if encoded else None
