"""KubeRay v1.7.0's Configuration API (``config.ray.io/v1alpha1`` ``Configuration``) as models.

The ``--config`` file of ``rayop run`` is one such document. Every field of KubeRay's
``apis/config/v1alpha1`` type is modelled under its wire name, strictly (a string is no number,
a number is no boolean) and with unknown fields refused, down to the containers and env vars of
``headSidecarContainers``, ``workerSidecarContainers`` and ``defaultContainerEnvs``. KubeRay's
defaults (``SetDefaults_Configuration``) are applied by :meth:`Configuration.with_defaults`.
Loading a file with line numbers in its errors is :mod:`.configuration_file`; the checks that
need more than a type (names a pod would refuse) are :mod:`.configuration_checks`.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from rayop.apimachinery.objects import Obj
from rayop.controllers.config.pod_defaults import PodDefaults

__all__ = [
    "API_VERSION",
    "DEFAULT_BURST",
    "DEFAULT_METRICS_ADDR",
    "DEFAULT_PROBE_ADDR",
    "DEFAULT_QPS",
    "DEFAULT_RECONCILE_CONCURRENCY",
    "KIND",
    "Configuration",
    "ContainerSpec",
    "EnvVarSpec",
    "container_dict",
    "env_dict",
]

API_VERSION: Final = "config.ray.io/v1alpha1"
"""The only apiVersion KubeRay v1.7.0 decodes a Configuration from."""
KIND: Final = "Configuration"
"""The kind of the document."""

DEFAULT_METRICS_ADDR: Final = ":8080"
DEFAULT_PROBE_ADDR: Final = ":8082"
DEFAULT_ENABLE_LEADER_ELECTION: Final = True
DEFAULT_RECONCILE_CONCURRENCY: Final = 1
DEFAULT_QPS: Final = 100.0
DEFAULT_BURST: Final = 200


class _Strict(BaseModel):
    """Wire names, strict types, unknown fields refused, immutable."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, populate_by_name=False)


class EnvVarSpec(_Strict):
    """A ``corev1.EnvVar``: a name and either a value or a ``valueFrom`` source."""

    name: str
    value: str | None = None
    value_from: Obj | None = Field(default=None, alias="valueFrom")


class ContainerPortSpec(_Strict):
    """A ``corev1.ContainerPort``."""

    name: str | None = None
    host_port: int | None = Field(default=None, alias="hostPort")
    container_port: int = Field(alias="containerPort")
    protocol: str | None = None
    host_ip: str | None = Field(default=None, alias="hostIP")


class VolumeMountSpec(_Strict):
    """A ``corev1.VolumeMount``."""

    name: str
    read_only: bool | None = Field(default=None, alias="readOnly")
    recursive_read_only: str | None = Field(default=None, alias="recursiveReadOnly")
    mount_path: str = Field(alias="mountPath")
    sub_path: str | None = Field(default=None, alias="subPath")
    mount_propagation: str | None = Field(default=None, alias="mountPropagation")
    sub_path_expr: str | None = Field(default=None, alias="subPathExpr")


class ResourcesSpec(_Strict):
    """A ``corev1.ResourceRequirements`` (quantities as YAML gives them: strings or numbers)."""

    limits: dict[str, str | int | float] | None = None
    requests: dict[str, str | int | float] | None = None
    claims: list[Obj] | None = None


class ContainerSpec(_Strict):
    """A ``corev1.Container`` of k8s.io/api v0.36 (KubeRay v1.7.0's), every field by wire name.

    Nested structures the operator only copies (probes, lifecycle, security context, ...) are
    kept as mappings; the API server validates them when the pod is created.
    """

    name: str
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    working_dir: str | None = Field(default=None, alias="workingDir")
    ports: list[ContainerPortSpec] | None = None
    env_from: list[Obj] | None = Field(default=None, alias="envFrom")
    env: list[EnvVarSpec] | None = None
    resources: ResourcesSpec | None = None
    resize_policy: list[Obj] | None = Field(default=None, alias="resizePolicy")
    restart_policy: str | None = Field(default=None, alias="restartPolicy")
    restart_policy_rules: list[Obj] | None = Field(default=None, alias="restartPolicyRules")
    volume_mounts: list[VolumeMountSpec] | None = Field(default=None, alias="volumeMounts")
    volume_devices: list[Obj] | None = Field(default=None, alias="volumeDevices")
    liveness_probe: Obj | None = Field(default=None, alias="livenessProbe")
    readiness_probe: Obj | None = Field(default=None, alias="readinessProbe")
    startup_probe: Obj | None = Field(default=None, alias="startupProbe")
    lifecycle: Obj | None = None
    termination_message_path: str | None = Field(default=None, alias="terminationMessagePath")
    termination_message_policy: str | None = Field(default=None, alias="terminationMessagePolicy")
    image_pull_policy: str | None = Field(default=None, alias="imagePullPolicy")
    security_context: Obj | None = Field(default=None, alias="securityContext")
    stdin: bool | None = None
    stdin_once: bool | None = Field(default=None, alias="stdinOnce")
    tty: bool | None = None


class Configuration(_Strict):
    """KubeRay's ``Configuration``: the operator's settings and the fleet's pod defaults.

    Fields a file leaves out are None (or empty) here; :meth:`with_defaults` fills in KubeRay's
    defaults for the ones it defaults.
    """

    api_version: Literal["config.ray.io/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["Configuration"]
    metrics_addr: str | None = Field(default=None, alias="metricsAddr")
    probe_addr: str | None = Field(default=None, alias="probeAddr")
    enable_leader_election: bool | None = Field(default=None, alias="enableLeaderElection")
    leader_election_namespace: str | None = Field(default=None, alias="leaderElectionNamespace")
    reconcile_concurrency: int | None = Field(default=None, alias="reconcileConcurrency")
    watch_namespace: str | None = Field(default=None, alias="watchNamespace")
    log_file: str | None = Field(default=None, alias="logFile")
    log_file_encoder: Literal["", "json", "console"] | None = Field(
        default=None, alias="logFileEncoder"
    )
    log_stdout_encoder: Literal["", "json", "console"] | None = Field(
        default=None, alias="logStdoutEncoder"
    )
    enable_batch_scheduler: bool | None = Field(default=None, alias="enableBatchScheduler")
    batch_scheduler: str | None = Field(default=None, alias="batchScheduler")
    head_sidecar_containers: list[ContainerSpec] | None = Field(
        default=None, alias="headSidecarContainers"
    )
    worker_sidecar_containers: list[ContainerSpec] | None = Field(
        default=None, alias="workerSidecarContainers"
    )
    default_container_envs: list[EnvVarSpec] | None = Field(
        default=None, alias="defaultContainerEnvs"
    )
    default_pod_annotations: dict[str, str] | None = Field(
        default=None, alias="defaultPodAnnotations"
    )
    default_pod_labels: dict[str, str] | None = Field(default=None, alias="defaultPodLabels")
    use_kubernetes_proxy: bool | None = Field(default=None, alias="useKubernetesProxy")
    delete_rayjob_after_job_finishes: bool | None = Field(
        default=None, alias="deleteRayJobAfterJobFinishes"
    )
    enable_metrics: bool | None = Field(default=None, alias="enableMetrics")
    qps: float | None = None
    burst: int | None = None

    def pod_defaults(self) -> PodDefaults:
        """Returns the sidecars, env vars, labels and annotations to put on every Ray pod."""
        return PodDefaults(
            head_sidecars=tuple(map(container_dict, self.head_sidecar_containers or [])),
            worker_sidecars=tuple(map(container_dict, self.worker_sidecar_containers or [])),
            container_envs=tuple(map(env_dict, self.default_container_envs or [])),
            labels=dict(self.default_pod_labels or {}),
            annotations=dict(self.default_pod_annotations or {}),
        )

    def with_defaults(self) -> Configuration:
        """Returns a copy with KubeRay's ``SetDefaults_Configuration`` applied.

        An empty address or a zero concurrency counts as unset, as in Go; QPS, burst and leader
        election are pointers there, so only a missing (or null) value is defaulted.
        """
        return self.model_copy(
            update={
                "metrics_addr": self.metrics_addr or DEFAULT_METRICS_ADDR,
                "probe_addr": self.probe_addr or DEFAULT_PROBE_ADDR,
                "enable_leader_election": (
                    DEFAULT_ENABLE_LEADER_ELECTION
                    if self.enable_leader_election is None
                    else self.enable_leader_election
                ),
                "reconcile_concurrency": self.reconcile_concurrency
                or DEFAULT_RECONCILE_CONCURRENCY,
                "qps": DEFAULT_QPS if self.qps is None else self.qps,
                "burst": DEFAULT_BURST if self.burst is None else self.burst,
            }
        )


_OMITTED_FALSE: Final = frozenset({"stdin", "stdinOnce", "tty", "readOnly"})
"""Boolean fields Go leaves out when false (``omitempty`` on a plain bool)."""


def _omit_empty(value: Any, key: str = "") -> Any:
    """Drops what Go's ``omitempty`` drops from the typed fields: empty strings, lists, maps."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            kept = _omit_empty(v, k)
            if kept is None or kept == "" or kept == [] or kept == {}:
                continue
            if kept is False and k in _OMITTED_FALSE:
                continue
            out[k] = kept
        return out
    if isinstance(value, list):
        return [_omit_empty(v) for v in value]
    return value


def container_dict(container: ContainerSpec) -> Obj:
    """Returns a container in the pod's wire form, as Go's encoder writes it (empty fields
    left out)."""
    dumped: Obj = _omit_empty(container.model_dump(by_alias=True, exclude_none=True))
    return dumped


def env_dict(env: EnvVarSpec) -> Obj:
    """Returns an env var in the pod's wire form (an empty value left out, as in Go)."""
    dumped: Obj = _omit_empty(env.model_dump(by_alias=True, exclude_none=True))
    return dumped
