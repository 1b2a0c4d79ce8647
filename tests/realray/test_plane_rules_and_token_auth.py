"""What a cluster's API server enforces, and Ray token auth, with real Ray heads (issue 36):
CRD CEL rules refuse a ``managedBy`` outside the allowed values and a change of ``managedBy``
with kube-apiserver's messages; a ResourceQuota refuses a worker pod (a Warning event and a
``ReplicaFailure`` condition say so) and the worker comes once the quota is raised; a RayJob
and a RayService with ``authOptions.mode: token`` get through to a dashboard that answers 401
without the token (the job SUCCEEDED, the RayService Ready and its app answering).

Each case runs for rayop on one ``rayop up --real-ray`` and for KubeRay v1.7.0 on one ``rayop
apiserver --real-ray``. Everything is applied at once by the module's fixture and each test
waits for its part, so the three clusters (a head and one worker under the quota, two heads with
token auth) start side by side. The kwok/embedded tiers test the same rules in depth
(tests/sim/test_crd_cel_rules.py, tests/e2e/test_raycluster_quota.py,
tests/e2e/test_rayservice_auth.py); this tier shows them with the processes real Ray runs.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rayop.kube.client import KubeClient
from rayop.kube.config import load_config

from .realray_support import KUBERAY_CONTROL, Kubectl, kuberay_on_apiserver, rayop_up_kubectl

pytestmark = pytest.mark.realray

KUBERAY = "ray.io/kuberay-operator"
MUST_BE = (
    "the managedBy field value must be either 'ray.io/kuberay-operator' or "
    "'kueue.x-k8s.io/multikueue'"
)
QUOTA_NS = "quota"
EXCEEDED = "exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1"


def _head_group(cpus: str, *, app: str | None = None) -> dict[str, Any]:
    """A head group of one 1-CPU container; ``app``: a ConfigMap mounted on its PYTHONPATH."""
    container: dict[str, Any] = {
        "name": "ray-head",
        "image": "rayproject/ray:2.60.0",
        "resources": {"limits": {"cpu": "1", "memory": "2Gi"}},
    }
    spec: dict[str, Any] = {"containers": [container]}
    if app is not None:
        container["env"] = [{"name": "PYTHONPATH", "value": "/home/ray/app"}]
        container["volumeMounts"] = [{"name": "app", "mountPath": "/home/ray/app"}]
        spec["volumes"] = [{"name": "app", "configMap": {"name": app}}]
    return {"rayStartParams": {"num-cpus": cpus}, "template": {"spec": spec}}


def quota_cluster(name: str, managed_by: str) -> dict[str, Any]:
    """A head with no CPU and one 1-CPU worker, in the quota's namespace."""
    worker = {
        "groupName": "small",
        "replicas": 1,
        "minReplicas": 1,
        "maxReplicas": 1,
        "rayStartParams": {"num-cpus": "1"},
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "ray-worker",
                        "image": "rayproject/ray:2.60.0",
                        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                    }
                ]
            }
        },
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": QUOTA_NS},
        "spec": {
            "rayVersion": "2.60.0",
            "managedBy": managed_by,
            "headGroupSpec": _head_group("0"),
            "workerGroupSpecs": [worker],
        },
    }


QUOTA = {
    "apiVersion": "v1",
    "kind": "ResourceQuota",
    "metadata": {"name": "pods", "namespace": QUOTA_NS},
    "spec": {"hard": {"pods": "1"}},
}

TOKEN_JOB = {
    "apiVersion": "ray.io/v1",
    "kind": "RayJob",
    "metadata": {"name": "token-job"},
    "spec": {
        "entrypoint": (
            'python -c "import ray; ray.init(); '
            "print('token job got', ray.get(ray.remote(lambda: 6 * 7).remote()))\""
        ),
        "rayClusterSpec": {
            "rayVersion": "2.60.0",
            "authOptions": {"mode": "token"},
            "headGroupSpec": _head_group("1"),
        },
    },
}

APP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "token-app"},
    "data": {
        "hello.py": (
            "from ray import serve\n\n"
            "@serve.deployment\n"
            "class Hello:\n"
            "    def __call__(self, request):\n"
            "        return 'hello with a token'\n\n"
            "app = Hello.bind()\n"
        )
    },
}

TOKEN_SERVICE = {
    "apiVersion": "ray.io/v1",
    "kind": "RayService",
    "metadata": {"name": "token-svc"},
    "spec": {
        "serveConfigV2": (
            "applications:\n"
            "  - name: hello\n"
            "    import_path: hello:app\n"
            "    route_prefix: /\n"
            "    deployments:\n"
            "      - name: Hello\n"
            "        num_replicas: 1\n"
            "        ray_actor_options: {num_cpus: 0.1}\n"
        ),
        "rayClusterConfig": {
            "rayVersion": "2.60.0",
            "authOptions": {"mode": "token"},
            "headGroupSpec": _head_group("1", app="token-app"),
            "workerGroupSpecs": [],
        },
    },
}


def _apply(kubectl: Kubectl, *objects: dict[str, Any]) -> None:
    kubectl.apply(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))


@pytest.fixture(scope="module", params=["rayop", KUBERAY_CONTROL])
def up(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, ray_env: str
) -> Iterator[Kubectl]:
    """The quota's cluster and both token-auth objects applied: with rayop on ``rayop up
    --real-ray``, or with KubeRay v1.7.0 on ``rayop apiserver --real-ray`` (reaching the
    dashboards through the API server: ``--use-kubernetes-proxy``)."""
    workdir = tmp_path_factory.mktemp(f"realray-plane-rules-{request.param}")
    plane: contextlib.AbstractContextManager[Kubectl]
    if request.param == "kuberay":
        plane = kuberay_on_apiserver(
            workdir, ray_env, operator_args=["--use-kubernetes-proxy=true"]
        )
    else:
        plane = rayop_up_kubectl(workdir, ray_env)
    with plane as kubectl:
        kubectl.run("create", "namespace", QUOTA_NS)
        _apply(kubectl, QUOTA)
        _wait_quota(kubectl, "1")
        _apply(kubectl, quota_cluster("quota", KUBERAY), TOKEN_JOB, APP, TOKEN_SERVICE)
        yield kubectl


def _poll(what: str, check: Callable[[], Any], timeout: float) -> Any:
    """Calls ``check()`` every second until it returns something true; returns that."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {timeout} s")
        time.sleep(1.0)
    return found


def _wait_quota(kubectl: Kubectl, pods: str) -> None:
    """Waits for the quota's status to show ``pods`` as its hard limit (it counts from then)."""
    _poll(
        f"the quota's status says pods={pods}",
        lambda: (
            kubectl.json("resourcequota", "pods", "-n", QUOTA_NS)
            .get("status", {})
            .get("hard", {})
            .get("pods")
            == pods
        ),
        30,
    )


def _refused(kubectl: Kubectl, path: Path, manifest: dict[str, Any], *args: str) -> str:
    """Runs ``kubectl args... -f <manifest>``, which must fail; returns its stderr."""
    path.write_text(json.dumps(manifest))
    proc = kubectl.run(*args, "-f", str(path), check=False)
    assert proc.returncode != 0, proc.stdout
    return proc.stderr


def _warnings(kubectl: Kubectl, namespace: str, reason: str) -> list[str]:
    events = kubectl.json("events", "-n", namespace, "--field-selector", f"reason={reason}")
    return [str(e["message"]) for e in events["items"] if e["type"] == "Warning"]


def _condition(kubectl: Kubectl, namespace: str, name: str, kind: str) -> dict[str, Any] | None:
    status = kubectl.json("raycluster", name, "-n", namespace).get("status") or {}
    return next((c for c in status.get("conditions") or [] if c["type"] == kind), None)


def _dashboard(kubectl: Kubectl, service: str, token: str | None) -> tuple[int, str]:
    """GETs the dashboard's job list through the service proxy, with the token or without."""
    path = f"/api/v1/namespaces/default/services/{service}:dashboard/proxy/api/jobs/"

    async def call() -> tuple[int, bytes]:
        config = await load_config(kubeconfig=str(kubectl.kubeconfig))
        headers = {"x-ray-authorization": f"Bearer {token}"} if token else None
        async with KubeClient(config, qps=-1) as kube:
            return await kube.request("GET", path, headers=headers, timeout=30)

    status, body = asyncio.run(call())
    return status, body.decode(errors="replace")


def _only_with_the_token(kubectl: Kubectl, cluster: str) -> None:
    """The cluster's dashboard refuses a call without the token and answers one with it."""
    secret = kubectl.json("secret", cluster)
    token = base64.b64decode(secret["data"]["auth_token"]).decode()
    service = f"{cluster}-head-svc"
    assert _dashboard(kubectl, service, None) == (401, "Unauthorized: Missing authentication token")
    status, body = _dashboard(kubectl, service, token)
    assert status == 200, body


def test_a_managed_by_outside_the_allowed_values_is_refused(up: Kubectl, tmp_path: Path) -> None:
    err = _refused(up, tmp_path / "other.json", quota_cluster("other", "someone-else"), "create")
    assert (
        f'The RayCluster "other" is invalid: spec.managedBy: Invalid value: "someone-else": '
        f"{MUST_BE}" in err
    ), err
    assert up.run("get", "raycluster", "other", "-n", QUOTA_NS, check=False).returncode != 0


def test_a_change_of_managed_by_is_refused(up: Kubectl, tmp_path: Path) -> None:
    changed = quota_cluster("quota", "kueue.x-k8s.io/multikueue")
    err = _refused(up, tmp_path / "changed.json", changed, "apply")
    assert (
        'The RayCluster "quota" is invalid: spec.managedBy: Invalid value: '
        '"kueue.x-k8s.io/multikueue": the managedBy field is immutable' in err
    ), err
    assert up.json("raycluster", "quota", "-n", QUOTA_NS)["spec"]["managedBy"] == KUBERAY


def test_a_quota_refuses_the_worker_until_it_is_raised(up: Kubectl) -> None:
    start = time.monotonic()
    [warning, *_] = _poll(
        "a FailedToCreateWorkerPod warning",
        lambda: _warnings(up, QUOTA_NS, "FailedToCreateWorkerPod"),
        120,
    )
    assert 'pods "quota-small-worker-' in warning and f"is forbidden: {EXCEEDED}" in warning, (
        warning
    )
    failure = _poll(
        "a ReplicaFailure condition",
        lambda: _condition(up, QUOTA_NS, "quota", "ReplicaFailure"),
        60,
    )
    assert failure["reason"] == "FailedCreateWorkerPod" and EXCEEDED in failure["message"], failure
    pods = up.json("pods", "-n", QUOTA_NS)["items"]
    assert [p["metadata"]["labels"]["ray.io/node-type"] for p in pods] == ["head"]

    up.run("patch", "resourcequota", "pods", "-n", QUOTA_NS, "-p", '{"spec":{"hard":{"pods":"2"}}}')
    raised = time.monotonic()
    _poll(
        "the cluster ready",
        lambda: (
            (up.json("raycluster", "quota", "-n", QUOTA_NS).get("status") or {}).get("state")
            == "ready"
        ),
        240,
    )
    print(
        f"\nquota: refusal seen {raised - start:.1f} s after apply; "
        f"quota raised -> ready in {time.monotonic() - raised:.1f} s"
    )
    workers = up.json("pods", "-n", QUOTA_NS, "-l", "ray.io/node-type=worker")["items"]
    assert [w["status"]["phase"] for w in workers] == ["Running"]
    assert _condition(up, QUOTA_NS, "quota", "ReplicaFailure") is None
    used = up.json("resourcequota", "pods", "-n", QUOTA_NS)["status"]["used"]
    assert used == {"pods": "2"}, used


def test_a_token_auth_rayjob_succeeds_through_the_token(up: Kubectl) -> None:
    up.wait_for("rayjob/token-job", ".status.jobStatus", "SUCCEEDED", timeout=360)
    up.wait_for("rayjob/token-job", ".status.jobDeploymentStatus", "Complete", timeout=60)
    job = up.json("rayjob", "token-job")
    [submitter] = up.pod_names("job-name=token-job")
    logs = up.run("logs", submitter).stdout
    assert "token job got 42" in logs, logs
    _only_with_the_token(up, job["status"]["rayClusterName"])


def test_a_token_auth_rayservice_gets_ready_through_the_token(up: Kubectl) -> None:
    ready = '.status.conditions[?(@.type=="Ready")].status'
    up.wait_for("rayservice/token-svc", ready, "True", timeout=360)
    path = "/api/v1/namespaces/default/services/token-svc-serve-svc:8000/proxy/"
    answer = _poll(
        "the serve Service answers",
        lambda: (proc := up.run("get", "--raw", path, check=False)).returncode == 0 and proc,
        60,
    )
    assert answer.stdout == "hello with a token", answer
    cluster = up.json("rayservice", "token-svc")["status"]["activeServiceStatus"]["rayClusterName"]
    _only_with_the_token(up, cluster)
