"""One object of every built-in kind the embedded server serves, for the protobuf tests.

Each sample uses the fields whose protobuf form is special: times and micro-times,
IntOrString, quantities, bytes, inlined messages (volume sources, probe handlers), pointers
set to a zero value, and maps.
"""

from __future__ import annotations

from typing import Any

from rayop.sim.apiserver.protobuf import message_class
from rayop.sim.apiserver.protobuf_json import message_to_dict, new_message

Obj = dict[str, Any]
_TIME = "2026-03-04T05:06:07Z"
_MICRO = "2026-03-04T05:06:07.123456Z"


def _meta(name: str, **extra: Any) -> Obj:
    return {"name": name, "labels": {"app": "proto"}, "annotations": {"a": "b"}, **extra}


_POD_SPEC: Obj = {
    "restartPolicy": "Never",
    "terminationGracePeriodSeconds": 0,
    "containers": [
        {
            "name": "c",
            "image": "busybox",
            "command": ["sh", "-c"],
            "args": ["sleep 1"],
            "ports": [{"name": "http", "containerPort": 8265, "protocol": "TCP"}],
            "env": [
                {"name": "A", "value": "1"},
                {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            ],
            "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"cpu": "1"}},
            "readinessProbe": {
                "httpGet": {"path": "/healthz", "port": 8265},
                "periodSeconds": 5,
            },
            "livenessProbe": {"exec": {"command": ["true"]}, "timeoutSeconds": 2},
            "volumeMounts": [{"name": "logs", "mountPath": "/tmp/ray"}],
            "securityContext": {"privileged": False, "runAsUser": 0},
        }
    ],
    "volumes": [
        {"name": "logs", "emptyDir": {}},
        {"name": "cfg", "configMap": {"name": "cfg", "optional": False}},
    ],
    "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
}


def samples() -> dict[tuple[str, str], Obj]:
    """(apiVersion, kind) -> an object to create (namespaced ones go to ``default``)."""
    objs: list[Obj] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta("proto-ns")},
        {"apiVersion": "v1", "kind": "Pod", "metadata": _meta("proto-pod"), "spec": _POD_SPEC},
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta("proto-svc"),
            "spec": {
                "selector": {"app": "proto"},
                "ports": [
                    {"name": "dash", "port": 8265, "targetPort": "dash"},
                    {"name": "gcs", "port": 6379, "targetPort": 6380, "protocol": "TCP"},
                ],
                "publishNotReadyAddresses": True,
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": _meta("proto-ep"),
            "subsets": [
                {"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80, "name": "http"}]}
            ],
        },
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": _meta("proto-event.1"),
            "involvedObject": {"kind": "Pod", "name": "proto-pod", "namespace": "default"},
            "reason": "Created",
            "message": "made",
            "type": "Normal",
            "count": 2,
            "firstTimestamp": _TIME,
            "lastTimestamp": _TIME,
            "eventTime": _MICRO,
            "source": {"component": "proto"},
            "reportingComponent": "proto",
            "reportingInstance": "proto-1",
            "action": "Create",
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta("proto-cm"),
            "data": {"k": "v"},
            "binaryData": {"b": "AAEC"},
            "immutable": False,
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": _meta("proto-secret"),
            "type": "Opaque",
            "data": {"p": "aGVsbG8="},
        },
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": _meta("proto-sa"),
            "automountServiceAccountToken": False,
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": _meta("proto-pvc"),
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": _meta("proto-node"),
            "spec": {"unschedulable": True, "taints": [{"key": "k", "effect": "NoSchedule"}]},
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": _meta("proto-slice"),
            "addressType": "IPv4",
            "endpoints": [
                {"addresses": ["10.0.0.1"], "conditions": {"ready": False, "serving": True}}
            ],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
        },
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": _meta("proto-event.2"),
            "eventTime": _MICRO,
            "reportingController": "proto",
            "reportingInstance": "proto-1",
            "action": "Created",
            "reason": "Created",
            "regarding": {"kind": "Pod", "name": "proto-pod", "namespace": "default"},
            "note": "made",
            "type": "Normal",
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _meta("proto-role"),
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": _meta("proto-rb"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "proto-sa", "namespace": "default"}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta("proto-cr"),
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta("proto-crb"),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "proto-cr",
            },
            "subjects": [{"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"}],
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": _meta("proto-job"),
            "spec": {
                "backoffLimit": 0,
                "activeDeadlineSeconds": 60,
                "template": {"metadata": {"labels": {"app": "proto"}}, "spec": _POD_SPEC},
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta("proto-deploy"),
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": "proto"}},
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1},
                },
                "template": {"metadata": {"labels": {"app": "proto"}}, "spec": _POD_SPEC},
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": _meta("proto-rs"),
            "spec": {
                "replicas": 0,
                "minReadySeconds": 5,
                "selector": {"matchLabels": {"app": "proto"}},
                "template": {"metadata": {"labels": {"app": "proto"}}, "spec": _POD_SPEC},
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": _meta("proto-sts"),
            "spec": {
                "replicas": 0,
                "serviceName": "proto",
                "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": {"app": "proto"}},
                "template": {"metadata": {"labels": {"app": "proto"}}, "spec": _POD_SPEC},
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "data"},
                        "spec": {
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "1Gi"}},
                        },
                    }
                ],
            },
        },
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": _meta("proto-lease"),
            "spec": {
                "holderIdentity": "me",
                "leaseDurationSeconds": 15,
                "acquireTime": _MICRO,
                "renewTime": _MICRO,
                "leaseTransitions": 0,
            },
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": _meta("proto-ing"),
            "spec": {
                "ingressClassName": "nginx",
                "rules": [
                    {
                        "host": "ray.example.com",
                        "http": {
                            "paths": [
                                {
                                    "path": "/",
                                    "pathType": "Prefix",
                                    "backend": {
                                        "service": {"name": "proto-svc", "port": {"number": 8265}}
                                    },
                                }
                            ]
                        },
                    }
                ],
            },
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": _meta("proto-np"),
            "spec": {
                "podSelector": {"matchLabels": {"ray.io/cluster": "c"}},
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": [{"podSelector": {"matchLabels": {"ray.io/cluster": "c"}}}]}],
                "egress": [
                    {
                        "to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}],
                        "ports": [{"protocol": "UDP", "port": 53, "endPort": 60}],
                    }
                ],
            },
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": _meta("proto-sc"),
            "provisioner": "rancher.io/local-path",
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowVolumeExpansion": False,
        },
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": _meta("proto-pdb"),
            "spec": {"minAvailable": 0, "selector": {"matchLabels": {"app": "proto"}}},
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": _meta("proto-pv"),
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "hostPath": {"path": "/tmp/pv"},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": _meta("proto-quota"),
            "spec": {
                "hard": {"pods": "4", "requests.cpu": "2"},
                "scopeSelector": {
                    "matchExpressions": [
                        {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}
                    ]
                },
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": _meta("proto-vwc"),
            "webhooks": [
                {
                    "name": "vwidget.example.com",
                    "clientConfig": {"url": "https://127.0.0.1:1/validate"},
                    "rules": [
                        {
                            "apiGroups": ["example.com"],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["widgets"],
                        }
                    ],
                    "failurePolicy": "Ignore",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "timeoutSeconds": 5,
                }
            ],
        },
    ]
    return {(o["apiVersion"], o["kind"]): o for o in objs}


def as_served(obj: Obj) -> Obj:
    """What the message path (upb's constructor, then back to a dict, no memo) gives a protobuf
    client for ``obj``: the reference the faster paths are checked against."""
    cls = message_class(obj["apiVersion"], obj["kind"])
    assert cls is not None
    out = message_to_dict(new_message(cls, obj))
    return {**out, "apiVersion": obj["apiVersion"], "kind": obj["kind"]}
