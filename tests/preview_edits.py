"""Edits of the RayCluster, RayJob and RayService samples, the verdict ``rayop preview -f`` gives each,
and whether what an operator then did agrees with a verdict: shared by the embedded plane's
check of rayop (``tests/test_cli_preview_matches_rayop.py``) and the real tier's of KubeRay
v1.7.0 (``tests/real/test_preview_matches_kuberay.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

import yaml

Obj = dict[str, Any]


def set_env(obj: Obj) -> None:
    container = obj["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    container.setdefault("env", []).append({"name": "EDITED", "value": "1"})


def set_start_param(obj: Obj) -> None:
    obj["spec"]["headGroupSpec"].setdefault("rayStartParams", {})["num-gpus"] = "0"


def set_label(obj: Obj) -> None:
    obj["metadata"].setdefault("labels", {})["team"] = "edited"


def set_toleration(obj: Obj) -> None:
    template = obj["spec"]["workerGroupSpecs"][0]["template"]["spec"]
    template["tolerations"] = [{"key": "edited", "operator": "Exists", "effect": "NoSchedule"}]


def add_replica(obj: Obj) -> None:
    group = obj["spec"]["workerGroupSpecs"][0]
    group["replicas"] = int(group.get("replicas") or 0) + 1
    group["maxReplicas"] = max(int(group.get("maxReplicas") or 0), group["replicas"])


def recreate(obj: Obj) -> None:
    obj["spec"]["upgradeStrategy"] = {"type": "Recreate"}


def suspend(obj: Obj) -> None:
    obj["spec"]["suspend"] = True


def resume(obj: Obj) -> None:
    obj["spec"]["suspend"] = False


def serve_config(obj: Obj) -> None:
    config = yaml.safe_load(obj["spec"]["serveConfigV2"])
    app = config["applications"][0]
    app["args"] = {**(app.get("args") or {}), "edited": "1"}
    obj["spec"]["serveConfigV2"] = yaml.safe_dump(config)


def service_image(obj: Obj) -> None:
    config = obj["spec"]["rayClusterConfig"]
    for group in [config["headGroupSpec"], *config["workerGroupSpecs"]]:
        group["template"]["spec"]["containers"][0]["image"] = "rayproject/ray:2.61.0"


CLUSTER_EDITS: Final[list[tuple[Callable[[Obj], None], str]]] = [
    (set_env, "nothing"),
    (set_start_param, "nothing"),
    (set_label, "nothing"),
    (set_toleration, "nothing"),
    (add_replica, "create pods"),
    # the head pod's recreate hash predates the edits above: Recreate rebuilds the cluster
    (recreate, "recreate pods"),
    (suspend, "recreate pods"),
]
"""Edits of a RayCluster, in order, and the verdict expected of each."""
SERVICE_EDITS: Final[list[tuple[Callable[[Obj], None], str]]] = [
    (serve_config, "update in place"),
    (service_image, "new RayCluster"),
]
"""Edits of the RayService sample (``rayservice-sample``), in order, and their verdicts."""
JOB_EDITS: Final[list[tuple[Callable[[Obj], None], str]]] = [
    (set_label, "nothing"),
    # a running RayJob: the cluster and the submitter Job are deleted, the job goes Suspended
    (suspend, "job"),
    # suspended: a new cluster, the job submitted again
    (resume, "new RayCluster"),
]
"""Edits of a running RayJob (the sample with :data:`LONG_ENTRYPOINT`), in order, and their
verdicts."""
LONG_ENTRYPOINT: Final = "python -c 'import time; time.sleep(3600)'"
"""An entrypoint that keeps the sample RayJob running through its edits (a simulated Ray job
runs as long as its entrypoint sleeps)."""
POD_DELETES: Final = ("delete", "deletecollection")
"""The audit verbs that delete pods (KubeRay deletes a Recreate cluster's pods in one
``deletecollection``)."""
QUIET: Final = frozenset({"nothing", "status only", "update in place"})
"""The verdicts after which no pod may be created or deleted, no RayCluster created or deleted
and no Job created or deleted."""
Observed = tuple[int, int, int, int]
"""(pod creates, pod deletes, RayCluster creates, job writes: RayCluster deletes and Job creates
and deletes)."""


def observed(writes: Iterable[tuple[str, str, int]]) -> Observed:
    """Counts the audit's ``(verb, resource, code)`` writes an edit's verdict is checked on."""
    counts = [0, 0, 0, 0]
    for verb, resource, code in writes:
        if code >= 300:
            continue
        if resource == "pods":
            counts[0] += verb == "create"
            counts[1] += verb in POD_DELETES
        elif resource == "rayclusters":
            counts[2] += verb == "create"
            counts[3] += verb == "delete"
        elif resource == "jobs":
            counts[3] += verb in ("create", "delete")
    return counts[0], counts[1], counts[2], counts[3]


def agrees(verdict: str, creates: int, deletes: int, clusters: int, job_writes: int) -> bool:
    """Tells whether what an operator wrote (:data:`Observed`) agrees with ``verdict``."""
    if verdict == "new RayCluster":
        return clusters > 0
    if verdict == "recreate pods":
        return deletes > 0 and clusters == 0
    if verdict == "create pods":
        return creates > 0 and deletes == 0 and clusters == 0
    if verdict == "job":
        return job_writes > 0 and creates == 0 and clusters == 0
    return verdict in QUIET and creates == deletes == clusters == job_writes == 0
