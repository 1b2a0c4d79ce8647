"""The ingress step: create when absent, leave a foreign Ingress alone, repair KubeRay's fields."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rayop.api.validation import parse_raycluster
from rayop.controllers.raycluster.ingress_sync import ingress_update, reconcile_ingress
from rayop.controllers.raycluster.services import build_head_ingress
from rayop.kube.errors import ApiError
from rayop.kube.resources import INGRESSES

from ._fakes import Fakes, conflict, context
from ._fixtures import minimal_cluster


def _cluster(**annotations: str) -> dict[str, Any]:
    cluster = minimal_cluster()
    cluster["spec"]["headGroupSpec"]["enableIngress"] = True
    cluster["metadata"]["annotations"] = dict(annotations)
    return cluster


def _live(cluster: dict[str, Any]) -> dict[str, Any]:
    """Returns the Ingress as the API server would hold it after our create."""
    parsed, problems = parse_raycluster(cluster)
    assert parsed is not None, problems
    ingress = build_head_ingress(parsed)
    ingress["metadata"].update(resourceVersion="7", uid="ing-1")
    return ingress


async def test_ingress_only_when_enabled() -> None:
    fakes = Fakes()
    await reconcile_ingress(context(minimal_cluster(), fakes))
    assert fakes.api.calls == []
    await reconcile_ingress(context(_cluster(), fakes))
    assert [c.name for c in fakes.api.calls_of("create", "Ingress")] == ["rc-head-ingress"]
    assert fakes.events.reasons() == ["CreatedIngress"]
    assert fakes.events.recorded[0].note == "Created ingress ns/rc-head-ingress"


async def test_an_ingress_that_agrees_is_not_written() -> None:
    fakes = Fakes()
    cluster = _cluster(x="y")
    fakes.informers.informer(INGRESSES).put(_live(cluster))
    await reconcile_ingress(context(cluster, fakes))
    assert fakes.api.calls == []
    assert fakes.events.reasons() == []


async def test_drifted_labels_annotations_and_spec_are_written_back() -> None:
    fakes = Fakes()
    cluster = _cluster(x="y")
    live = _live(cluster)
    live["metadata"]["labels"]["extra"] = "by-hand"
    live["metadata"]["annotations"] = {"x": "changed", "other": "1"}
    live["spec"]["rules"][0]["http"]["paths"][0]["path"] = "/elsewhere"
    fakes.informers.informer(INGRESSES).put(live)

    await reconcile_ingress(context(cluster, fakes))

    (update,) = fakes.api.calls_of("update", "Ingress")
    body = update.body
    assert body["metadata"]["labels"] == _live(cluster)["metadata"]["labels"]
    assert body["metadata"]["annotations"] == {"x": "y"}
    assert body["spec"] == _live(cluster)["spec"]
    # What KubeRay does not manage is kept: the resourceVersion (optimistic lock), the owner.
    assert body["metadata"]["resourceVersion"] == "7"
    assert body["metadata"]["ownerReferences"] == live["metadata"]["ownerReferences"]
    assert fakes.events.reasons() == ["UpdatedIngress"]


def test_an_admission_default_ingress_class_is_kept_when_none_is_asked_for() -> None:
    cluster = _cluster()
    live = _live(cluster)
    live["spec"]["ingressClassName"] = "cluster-default"
    assert ingress_update(live, _live(cluster)) is None


def test_an_asked_for_ingress_class_wins_over_the_live_one() -> None:
    cluster = _cluster(**{"kubernetes.io/ingress.class": "nginx"})
    live = _live(cluster)
    live["spec"]["ingressClassName"] = "other"
    updated = ingress_update(live, _live(cluster))
    assert updated is not None and updated["spec"]["ingressClassName"] == "nginx"


def test_fields_the_server_omits_when_empty_are_no_drift() -> None:
    cluster = _cluster()
    desired = _live(cluster)
    live = copy.deepcopy(desired)
    live["spec"]["rules"][0]["host"] = ""
    live["metadata"]["annotations"] = {}
    assert ingress_update(live, desired) is None


async def test_an_ingress_this_cluster_does_not_control_is_left_alone_with_a_warning() -> None:
    fakes = Fakes()
    cluster = _cluster()
    foreign = _live(cluster)
    foreign["metadata"]["ownerReferences"] = []
    foreign["spec"]["rules"][0]["http"]["paths"][0]["path"] = "/theirs"
    fakes.informers.informer(INGRESSES).put(foreign)

    assert await reconcile_ingress(context(cluster, fakes)) is None

    assert fakes.api.calls == []
    assert fakes.events.reasons() == ["FailedToCreateIngress"]
    assert fakes.events.recorded[0].note == (
        "Ingress ns/rc-head-ingress already exists and is not owned by this RayCluster; "
        "not modifying it"
    )


async def test_a_failed_update_is_a_warning_and_the_error() -> None:
    fakes = Fakes()
    cluster = _cluster()
    live = _live(cluster)
    live["metadata"]["labels"] = {}
    fakes.informers.informer(INGRESSES).put(live)
    fakes.api.fail_every("update", conflict("rc-head-ingress"), kind="Ingress")

    with pytest.raises(ApiError):
        await reconcile_ingress(context(cluster, fakes))

    assert fakes.events.reasons() == ["FailedToUpdateIngress"]
    assert fakes.events.recorded[0].type == "Warning"


async def test_a_create_racing_an_unseen_ingress_counts_as_done() -> None:
    fakes = Fakes()
    unseen = {"metadata": {"name": "rc-head-ingress", "namespace": "ns"}}  # not cached
    fakes.api.put(INGRESSES, unseen)
    await reconcile_ingress(context(_cluster(), fakes))
    assert fakes.events.reasons() == []
