"""Operator settings that KubeRay reads from environment variables (the gates: :mod:`.gates`).

KubeRay calls ``os.Getenv`` at the point of use; rayop reads the environment once into a frozen
:class:`OperatorOptions` and passes it to every builder, so tests can state the settings they run
under. The defaults are those of KubeRay v1.7.0 (its flags in ``ray-operator/main.go``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.pod_defaults import NO_POD_DEFAULTS, PodDefaults

KUBERAY_VERSION = "v1.7.0"
"""The KubeRay version rayop is compatible with; written into head pods and usage tags."""

DEFAULT_CLUSTER_DOMAIN = "cluster.local"
DEFAULT_REQUEUE_SECONDS = 300
DEFAULT_RAYJOB_SECONDS = 300


def _enabled_unless_false(environ: Mapping[str, str], key: str) -> bool:
    return environ.get(key, "").lower() != "false"


def _enabled_if_true(environ: Mapping[str, str], key: str) -> bool:
    return environ.get(key, "").lower() == "true"


def _int_or(environ: Mapping[str, str], key: str, default: int) -> int:
    try:
        return int(environ.get(key, ""))
    except ValueError:
        return default


@dataclass(frozen=True, kw_only=True)
class OperatorOptions:
    """Environment-driven operator settings; build with :meth:`from_env` or directly in tests."""

    enable_init_container_injection: bool = True
    """``ENABLE_INIT_CONTAINER_INJECTION``; only ``"false"`` disables the wait-gcs-ready init container."""
    enable_probes_injection: bool = True
    """``ENABLE_PROBES_INJECTION``; only ``"false"`` disables injected liveness/readiness probes."""
    enable_ray_head_cluster_ip_service: bool = False
    """``ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE``; ``"true"`` makes the head service a normal ClusterIP one."""
    enable_deterministic_head_pod_name: bool = False
    """``ENABLE_DETERMINISTIC_HEAD_POD_NAME``; ``"true"`` names the head pod ``<cluster>-head``."""
    enable_login_shell: bool = False
    """``ENABLE_LOGIN_SHELL``; ``"true"`` runs containers with ``/bin/bash -cl --``."""
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN
    """``CLUSTER_DOMAIN``; the DNS domain used in the head service FQDN."""
    default_requeue_seconds: int = DEFAULT_REQUEUE_SECONDS
    """``RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV``; periodic requeue when nothing changed (seconds)."""
    enable_gcs_ft_redis_cleanup: bool = True
    """``ENABLE_GCS_FT_REDIS_CLEANUP``; only ``"false"`` disables the Redis cleanup finalizer."""
    enable_random_pod_delete: bool = False
    """``ENABLE_RANDOM_POD_DELETE``; lets the operator scale down autoscaled groups itself."""
    use_ingress_on_openshift: bool = False
    """``USE_INGRESS_ON_OPENSHIFT``: on OpenShift, make the head Ingress rather than a Route."""
    is_openshift: bool = False
    """Whether the API server is OpenShift (not from the environment: detected once at startup
    by ``rayop run``, :func:`rayop.controllers.raycluster.route.is_openshift_cluster`)."""
    cert_manager_available: bool = False
    """Whether the API server serves ``cert-manager.io/v1`` (not from the environment: detected
    once at startup by ``rayop run``, as KubeRay's ``main.go``; mTLS needs it)."""
    enable_zero_downtime: bool = True
    """``ENABLE_ZERO_DOWNTIME`` (RayService); only ``"false"`` disables it."""
    delete_rayjob_cr_after_job_finishes: bool = False
    """``DELETE_RAYJOB_CR_AFTER_JOB_FINISHES``."""
    rayjob_deployment_status_transition_grace_period_seconds: int = DEFAULT_RAYJOB_SECONDS
    """``RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS``."""
    rayjob_status_check_timeout_seconds: int = DEFAULT_RAYJOB_SECONDS
    """``RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS``."""
    enable_webhooks: bool = False
    """``ENABLE_WEBHOOKS``."""
    batch_scheduler: str = ""
    """The batch scheduler (``--batch-scheduler``, ``volcano`` for ``--enable-batch-scheduler``;
    checked by ``batchscheduler.registry``); "" for none."""
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    """Feature gates (not from the environment: ``--feature-gates``)."""
    pod_defaults: PodDefaults = NO_POD_DEFAULTS
    """Sidecars, env vars, labels and annotations of KubeRay's Configuration (``--config``)."""

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, feature_gates: FeatureGates | None = None
    ) -> OperatorOptions:
        """Reads every setting from ``environ`` (default ``os.environ``) the way KubeRay parses it."""
        env = os.environ if environ is None else environ
        return cls(
            enable_init_container_injection=_enabled_unless_false(
                env, "ENABLE_INIT_CONTAINER_INJECTION"
            ),
            enable_probes_injection=_enabled_unless_false(env, "ENABLE_PROBES_INJECTION"),
            enable_ray_head_cluster_ip_service=_enabled_if_true(
                env, "ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE"
            ),
            enable_deterministic_head_pod_name=_enabled_if_true(
                env, "ENABLE_DETERMINISTIC_HEAD_POD_NAME"
            ),
            enable_login_shell=_enabled_if_true(env, "ENABLE_LOGIN_SHELL"),
            cluster_domain=env.get("CLUSTER_DOMAIN") or DEFAULT_CLUSTER_DOMAIN,
            default_requeue_seconds=_int_or(
                env, "RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV", DEFAULT_REQUEUE_SECONDS
            ),
            enable_gcs_ft_redis_cleanup=_enabled_unless_false(env, "ENABLE_GCS_FT_REDIS_CLEANUP"),
            enable_random_pod_delete=_enabled_if_true(env, "ENABLE_RANDOM_POD_DELETE"),
            use_ingress_on_openshift=_enabled_if_true(env, "USE_INGRESS_ON_OPENSHIFT"),
            enable_zero_downtime=_enabled_unless_false(env, "ENABLE_ZERO_DOWNTIME"),
            delete_rayjob_cr_after_job_finishes=_enabled_if_true(
                env, "DELETE_RAYJOB_CR_AFTER_JOB_FINISHES"
            ),
            rayjob_deployment_status_transition_grace_period_seconds=_int_or(
                env,
                "RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS",
                DEFAULT_RAYJOB_SECONDS,
            ),
            rayjob_status_check_timeout_seconds=_int_or(
                env, "RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS", DEFAULT_RAYJOB_SECONDS
            ),
            enable_webhooks=env.get("ENABLE_WEBHOOKS") == "true",
            feature_gates=feature_gates or FeatureGates(),
        )


DEFAULT_OPTIONS = OperatorOptions()
"""KubeRay's defaults with no environment variable set."""
