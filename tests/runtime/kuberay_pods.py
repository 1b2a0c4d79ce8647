"""KubeRay-like worker pod manifests (the shape and size KubeRay v1.7 creates), for scale tests."""

from __future__ import annotations

from typing import Any

START_CMD = (
    "ulimit -n 65536; ray start  --address=raycluster-{c}-head-svc.default.svc.cluster.local:6379 "
    "--block  --dashboard-agent-listen-port=52365  --memory=4294967296  --metrics-export-port=8080  "
    "--num-cpus=1 "
)
PROBE = (
    "wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success "
    "&& wget --tries 1 -T 10 -q -O- http://localhost:8000/-/healthz | grep success"
)
WAIT_GCS = (
    'SECONDS=0\nwhile true; do\n  if (( SECONDS <= 120 )); then\n    if ray health-check '
    '--address raycluster-{c}-head-svc.default.svc.cluster.local:6379 > /dev/null 2>&1; then\n'
    '      echo "GCS is ready."\n      break\n    fi\n    echo "$SECONDS seconds elapsed: Waiting for'
    ' GCS to be ready."\n  else\n    if ray health-check --address raycluster-{c}-head-svc.default.'
    'svc.cluster.local:6379; then\n      echo "GCS is ready. Any error messages above can be safely '
    'ignored."\n      break\n    fi\n    echo "$SECONDS seconds elapsed: Still waiting for GCS to be '
    'ready. For troubleshooting, refer to the FAQ at https://github.com/ray-project/kuberay/blob/'
    'master/docs/guidance/FAQ.md."\n  fi\n  sleep 5\ndone'
)


def kuberay_worker_pod(cluster: str, index: int, namespace: str = "default") -> dict[str, Any]:
    """Returns a worker pod of RayCluster ``cluster`` as KubeRay would create it (about 6 KB)."""
    name = f"raycluster-{cluster}-workergroup-worker-{index:05d}"
    env = [
        {"name": "FQ_RAY_IP", "value": f"raycluster-{cluster}-head-svc.{namespace}.svc.cluster.local"},
        {"name": "RAY_IP", "value": f"raycluster-{cluster}-head-svc"},
        {"name": "RAY_CLUSTER_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels['ray.io/cluster']"}}},
        {"name": "RAY_CLOUD_INSTANCE_ID", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
        {"name": "RAY_NODE_TYPE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels['ray.io/group']"}}},
        {"name": "KUBERAY_GEN_RAY_START_CMD", "value": START_CMD.format(c=cluster)},
        {"name": "RAY_PORT", "value": "6379"},
        {"name": "RAY_ADDRESS", "value": f"raycluster-{cluster}-head-svc.{namespace}.svc.cluster.local:6379"},
        {"name": "RAY_USAGE_STATS_KUBERAY_IN_USE", "value": "1"},
        {"name": "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "value": "1"},
    ]
    resources = {"limits": {"cpu": "1", "memory": "4Gi"}, "requests": {"cpu": "1", "memory": "4Gi"}}
    probe = {"exec": {"command": ["bash", "-c", PROBE]}, "failureThreshold": 120,
             "initialDelaySeconds": 30, "periodSeconds": 5, "successThreshold": 1, "timeoutSeconds": 2}
    labels = {
        "app.kubernetes.io/created-by": "kuberay-operator", "app.kubernetes.io/name": "kuberay",
        "ray.io/cluster": f"raycluster-{cluster}", "ray.io/group": "workergroup",
        "ray.io/identifier": f"raycluster-{cluster}-worker", "ray.io/is-ray-node": "yes",
        "ray.io/node-type": "worker", "ray.io/worker-group-replica-index": str(index),
    }

    def condition(t: str) -> dict[str, Any]:
        return {"lastProbeTime": None, "lastTransitionTime": "2025-01-01T00:00:05Z", "status": "True", "type": t}

    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name, "namespace": namespace, "generateName": f"raycluster-{cluster}-workergroup-worker-",
            "labels": labels,
            "annotations": {"ray.io/ft-enabled": "false", "ray.io/kuberay-version": "v1.7.0",
                            "ray.io/overwrite-container-cmd": "false"},
            "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": f"raycluster-{cluster}",
                                 "uid": f"00000000-0000-0000-0000-{hash(cluster) & 0xFFFFFFFFFFFF:012x}",
                                 "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {
            "containers": [{
                "name": "ray-worker", "image": "rayproject/ray:2.46.0", "imagePullPolicy": "IfNotPresent",
                "command": ["/bin/bash", "-c", "--"],
                "args": [f"ulimit -n 65536; {START_CMD.format(c=cluster)}"],
                "env": env, "resources": resources,
                "ports": [{"containerPort": 8080, "name": "metrics", "protocol": "TCP"}],
                "livenessProbe": probe, "readinessProbe": {**probe, "failureThreshold": 10},
                "volumeMounts": [{"mountPath": "/dev/shm", "name": "shared-mem"},
                                 {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                  "name": "kube-api-access", "readOnly": True}],
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            }],
            "initContainers": [{
                "name": "wait-gcs-ready", "image": "rayproject/ray:2.46.0", "imagePullPolicy": "IfNotPresent",
                "command": ["/bin/bash", "-lc", "--"], "args": [WAIT_GCS.format(c=cluster)],
                "env": env[:2], "resources": {"limits": {"cpu": "200m", "memory": "256Mi"},
                                              "requests": {"cpu": "200m", "memory": "256Mi"}},
            }],
            "volumes": [{"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "4Gi"}},
                        {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}],
            "restartPolicy": "Always", "schedulerName": "default-scheduler", "serviceAccountName": "default",
            "dnsPolicy": "ClusterFirst", "enableServiceLinks": True, "priority": 0,
            "terminationGracePeriodSeconds": 30, "nodeName": f"node-{index % 50}",
            "tolerations": [
                {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
                {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300},
            ],
        },
        "status": {
            "phase": "Running", "qosClass": "Guaranteed", "hostIP": f"10.0.{index % 50}.1",
            "podIP": f"10.244.{index // 250}.{index % 250}", "podIPs": [{"ip": f"10.244.{index // 250}.{index % 250}"}],
            "startTime": "2025-01-01T00:00:00Z",
            "conditions": [condition(t) for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "containerStatuses": [{"name": "ray-worker", "image": "docker.io/rayproject/ray:2.46.0",
                                   "imageID": "docker.io/rayproject/ray@sha256:" + "ab" * 32,
                                   "containerID": f"containerd://{index:064x}", "ready": True,
                                   "restartCount": 0, "started": True,
                                   "state": {"running": {"startedAt": "2025-01-01T00:00:04Z"}},
                                   "lastState": {}}],
        },
    }
