"""Names of the objects KubeRay creates for a RayCluster, with its truncation rules.

KubeRay cuts pod name prefixes to 50 characters (``PodName``), trims other generated names from
the *left* to 50 characters (``CheckName``) and label values from the left to 63 (``CheckLabel``),
and replaces a leading digit or punctuation character with ``r``. Functions that take a cluster
accept the parsed model or its wire dict (see :func:`~rayop.controllers.kit.cluster_access.parse_cluster`).
"""

from __future__ import annotations

import random
import unicodedata

from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit.cluster_access import ClusterLike

MAX_POD_PREFIX = 50
MAX_CHECKED_NAME = 50
MAX_LABEL_VALUE = 63
HEAD_GROUP_LABEL_VALUE = "headgroup"
_RANDOM_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The alphabet of apimachinery's ``rand.String`` (the API server's generateName suffix too)."""


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P")


def _fix_first_char(s: str, *, digits: bool) -> str:
    if s and digits and s[0].isdigit():
        s = "r" + s[1:]
    if s and _is_punct(s[0]):
        s = "r" + s[1:]
    return s


def check_name(s: str) -> str:
    """Trims ``s`` from the left to 50 characters and fixes a leading digit/punctuation (``CheckName``)."""
    if len(s) > MAX_CHECKED_NAME:
        s = s[len(s) - MAX_CHECKED_NAME :]
    return _fix_first_char(s, digits=True)


def check_label(s: str) -> str:
    """Trims a label value from the left to 63 characters and fixes leading punctuation (``CheckLabel``)."""
    if len(s) > MAX_LABEL_VALUE:
        s = s[len(s) - MAX_LABEL_VALUE :]
    return _fix_first_char(s, digits=False)


def pod_name(prefix: str, node_type: str, *, generate: bool) -> str:
    """Returns ``<prefix[:50]>-<node_type>`` lower-cased, with a trailing ``-`` for generateName."""
    result = (prefix[:MAX_POD_PREFIX] + "-" + node_type).lower()
    return result + "-" if generate else result


def head_pod_name(cluster: ClusterLike, *, deterministic: bool) -> str:
    """Returns the head pod's generateName (``<cluster>-head-``) or its fixed name (``<cluster>-head``)."""
    return pod_name(cs.parse_cluster(cluster).name, "head", generate=not deterministic)


def worker_pod_generate_name(cluster: ClusterLike, group_name: str) -> str:
    """Returns a worker pod's generateName, ``<cluster>-<group>-worker-`` with the 50-char cut."""
    return pod_name(f"{cs.parse_cluster(cluster).name}-{group_name}", "worker", generate=True)


def identifier(cluster_name: str, node_type: str) -> str:
    """Returns the ``ray.io/identifier`` label value, ``<cluster>-<head|worker>`` (label-checked)."""
    return check_label(f"{cluster_name}-{node_type}")


def head_service_name(cluster: ClusterLike) -> str:
    """Returns ``headGroupSpec.headService.metadata.name`` or ``<cluster>-head-svc``."""
    rc = cs.parse_cluster(cluster)
    head_service = rc.spec.head_group_spec.head_service or {}
    custom = (head_service.get("metadata") or {}).get("name")
    return str(custom) if custom else f"{rc.name}-head-svc"


def head_service_fqdn(cluster: ClusterLike, *, cluster_domain: str) -> str:
    """Returns ``<head-svc>.<namespace>.svc.<domain>``, the address workers use."""
    rc = cs.parse_cluster(cluster)
    return f"{head_service_name(rc)}.{cs.cluster_namespace(rc)}.svc.{cluster_domain}"


def short_name_from_fqdn(fqdn: str) -> str:
    """Returns the first DNS label of an FQDN (the deprecated ``RAY_IP`` value)."""
    return fqdn.split(".")[0]


def owner_head_service_name(owner_name: str) -> str:
    """Returns the head service name a RayJob/RayService keeps for itself, ``<owner>-head-svc``."""
    return f"{owner_name}-head-svc"


def serve_service_name(owner_name: str) -> str:
    """Returns ``<name>-serve-svc``."""
    return f"{owner_name}-serve-svc"


def serve_service_label(owner_name: str) -> str:
    """Returns the ``ray.io/serve`` label value of a serve service, ``<name>-serve``."""
    return f"{owner_name}-serve"


def headless_worker_service_name(cluster: ClusterLike) -> str:
    """Returns ``<cluster>-headless``, the multi-host workers' headless service."""
    return f"{cs.parse_cluster(cluster).name}-headless"


def ingress_name(cluster: ClusterLike) -> str:
    """Returns ``<cluster>-head-ingress`` (name-checked)."""
    return check_name(f"{cs.parse_cluster(cluster).name}-head-ingress")


def redis_cleanup_job_name(cluster: ClusterLike) -> str:
    """Returns ``<cluster>-redis-cleanup``."""
    return f"{cs.parse_cluster(cluster).name}-redis-cleanup"


def auth_secret_name(cluster: ClusterLike) -> str:
    """Returns the Ray auth token Secret name: ``authOptions.secretName`` or ``CheckName(<cluster>)``."""
    rc = cs.parse_cluster(cluster)
    auth = rc.spec.auth_options
    custom = auth.secret_name if auth is not None else None
    return custom if custom else check_name(rc.name)


def autoscaler_service_account_name(cluster: ClusterLike) -> str:
    """Returns the autoscaler ServiceAccount name (head ``serviceAccountName`` or cluster), name-checked."""
    return check_name(cs.head_service_account_name(cs.parse_cluster(cluster)))


def autoscaler_role_name(cluster: ClusterLike) -> str:
    """Returns the autoscaler Role and RoleBinding name (the cluster name, name-checked)."""
    return check_name(cs.parse_cluster(cluster).name)


def random_suffix(rng: random.Random, length: int = 5) -> str:
    """Returns ``length`` random characters from apimachinery's ``rand.String`` alphabet."""
    return "".join(rng.choice(_RANDOM_ALPHABET) for _ in range(length))


def replica_group_name(group_name: str, rng: random.Random) -> str:
    """Returns a new multi-host replica name, ``<group>-<5 random chars>``."""
    return f"{group_name}-{random_suffix(rng)}"
