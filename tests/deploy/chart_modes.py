"""The values modes the chart is linted, rendered and installed in (fast and real tiers)."""

from __future__ import annotations

from typing import Any

Values = dict[str, Any]

SIDECAR = {"name": "fluentbit", "image": "fluent/fluent-bit:1.9"}

MODES: dict[str, Values] = {
    "default": {},
    "singleNamespaceInstall": {"singleNamespaceInstall": True},
    "singleNamespaceInstall with watchNamespace": {
        "singleNamespaceInstall": True,
        "watchNamespace": ["team-a", "team-b"],
    },
    "crNamespacedRbacEnable=false": {
        "singleNamespaceInstall": True,
        "crNamespacedRbacEnable": False,
    },
    "rbacEnable=false": {"rbacEnable": False},
    "watchNamespace list": {"watchNamespace": ["team-a", "team-b"]},
    "configuration": {
        "configuration": {
            "enabled": True,
            "defaultContainerEnvs": [{"name": "RAY_enable_open_telemetry", "value": "true"}],
            "defaultPodAnnotations": {"cost-center": "ml"},
            "defaultPodLabels": {"team": "ml"},
            "headSidecarContainers": [SIDECAR],
            "workerSidecarContainers": [SIDECAR],
        },
        "watchNamespace": ["team-a"],
        "useKubernetesProxy": True,
    },
    "metrics off": {"metrics": {"enabled": False}},
    "serviceMonitor": {
        "metrics": {
            "serviceMonitor": {
                "enabled": True,
                "additionalLabels": {"release": "prometheus"},
                "namespace": "monitoring",
            }
        }
    },
    "prometheusRule": {
        "metrics": {
            "prometheusRule": {
                "enabled": True,
                "additionalLabels": {"release": "prometheus"},
                "namespace": "monitoring",
            }
        }
    },
    "leader election off": {"leaderElectionEnabled": False},
    "useKubernetesProxy": {"useKubernetesProxy": True},
    "log file": {"logging": {"baseDir": "/var/log/ray", "fileName": "op.log", "sizeLimit": "1Gi"}},
    "batchScheduler name": {"batchScheduler": {"name": "volcano"}},
    "batchScheduler enabled": {"batchScheduler": {"enabled": True}},
    "existing ServiceAccount": {"serviceAccount": {"create": False, "name": "ops"}},
    "pod placement and metadata": {
        "nodeSelector": {"pool": "ops"},
        "tolerations": [{"key": "dedicated", "operator": "Exists"}],
        "affinity": {"nodeAffinity": {}},
        "priorityClassName": "system-cluster-critical",
        "imagePullSecrets": [{"name": "regcred"}],
        "labels": {"team": "platform"},
        "annotations": {"owner": "platform"},
        "podSecurityContext": {"fsGroup": 65532},
        "env": [{"name": "ENABLE_INIT_CONTAINER_INJECTION", "value": "false"}],
        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
        "replicas": 2,
        "service": {"type": "NodePort", "port": 9090},
    },
    "no featureGates": {"featureGates": []},
    "tuning": {"reconcileConcurrency": 16, "kubeClient": {"qps": 50.5, "burst": 75}},
    "sharding": {"replicas": 3},
    "sharding off with replicas": {"replicas": 3, "rayop": {"sharding": False}},
    "sharding singleNamespaceInstall": {
        "replicas": 3,
        "singleNamespaceInstall": True,
        "watchNamespace": ["team-a", "team-b"],
    },
}
"""Mode name -> the values given with ``-f`` (besides the chart's defaults)."""

KUBERAY_COMPARABLE = [
    name for name in MODES if name not in {"existing ServiceAccount", "no featureGates"}
]
"""Modes in which KubeRay's chart, given the same values, renders the args rayop's starts with.

Left out: with ``featureGates: []`` KubeRay's chart renders an empty-string argument (rayop's
renders none), and KubeRay's ServiceAccount default name differs only by its name.
"""


def sharded(values: Values) -> bool:
    """Tells whether ``values`` run the replicas with ``--sharding`` (``rayop.sharding``; by
    default, more than one replica)."""
    mode = (values.get("rayop") or {}).get("sharding", "auto")
    return mode is True or (mode == "auto" and int(values.get("replicas", 1)) > 1)


def namespaced(values: Values) -> bool:
    """Tells whether ``values`` ask for namespaced RBAC (``singleNamespaceInstall``)."""
    return bool(values.get("singleNamespaceInstall"))


def rbac_namespaces(values: Values, release_namespace: str) -> list[str]:
    """Returns the namespaces that get the operator's Role in a namespaced install."""
    return list(values.get("watchNamespace") or [release_namespace])
