"""RBAC in the embedded API server: service-account tokens, role evaluation, 403s, escalation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from rayop.sim.controlplane import EmbeddedControlPlane

from .server_harness import Harness, open_harness

SA_USER = "system:serviceaccount:default:robot"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


@pytest.fixture
async def h() -> AsyncIterator[Harness]:
    async with open_harness() as harness:
        for ns in ("default", "other"):
            if ns != "default":
                await harness.call("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
        status, _ = await harness.call(
            "POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "robot"}}
        )
        assert status == 201
        yield harness


async def token_for(h: Harness, namespace: str = "default", name: str = "robot") -> str:
    status, body = await h.call(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    assert status == 201, body
    assert body["kind"] == "TokenRequest"
    assert body["status"]["expirationTimestamp"]
    return str(body["status"]["token"])


async def as_sa(h: Harness, token: str, method: str, path: str, body: Any = None) -> Any:
    return await h.call(method, path, body, headers={"Authorization": f"Bearer {token}"})


async def grant(
    h: Harness,
    rules: list[dict[str, Any]],
    *,
    namespace: str | None = "default",
    name: str = "robot-role",
) -> None:
    """Creates a Role (or a ClusterRole when namespace is None) and binds it to robot."""
    kind, plural = ("Role", "roles") if namespace else ("ClusterRole", "clusterroles")
    prefix = f"{RBAC}/namespaces/{namespace}" if namespace else RBAC
    status, body = await h.call(
        "POST", f"{prefix}/{plural}", {"metadata": {"name": name}, "rules": rules}
    )
    assert status == 201, body
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}],
    }
    bplural = "rolebindings" if namespace else "clusterrolebindings"
    status, body = await h.call("POST", f"{prefix}/{bplural}", binding)
    assert status == 201, body


async def test_a_token_without_bindings_is_forbidden_in_kubernetes_words(h: Harness) -> None:
    token = await token_for(h)
    status, body = await as_sa(h, token, "GET", "/api/v1/namespaces/default/pods")
    assert status == 403
    assert body["reason"] == "Forbidden"
    assert body["message"] == (
        f'pods is forbidden: User "{SA_USER}" cannot list resource "pods" '
        'in API group "" in the namespace "default"'
    )
    assert body["details"] == {"kind": "pods", "name": ""} or body["details"]["kind"] == "pods"
    status, body = await as_sa(h, token, "GET", "/apis/ray.io/v1/rayclusters")
    assert status == 404  # an unknown resource is 404 before authorization, as in Kubernetes
    status, body = await as_sa(h, token, "GET", "/apis/batch/v1/namespaces/default/jobs/x")
    assert status == 403
    assert body["message"] == (
        f'jobs.batch "x" is forbidden: User "{SA_USER}" cannot get resource "jobs" '
        'in API group "batch" in the namespace "default"'
    )


async def test_unknown_tokens_get_401_and_the_admin_token_stays_all_powerful(h: Harness) -> None:
    status, _ = await as_sa(h, "made-up", "GET", "/api/v1/namespaces/default/pods")
    assert status == 401
    status, _ = await h.call("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles")
    assert status == 200


async def test_a_role_binding_grants_only_in_its_namespace(h: Harness) -> None:
    await grant(h, [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}])
    token = await token_for(h)
    assert (await as_sa(h, token, "GET", "/api/v1/namespaces/default/pods"))[0] == 200
    status, body = await as_sa(h, token, "GET", "/api/v1/namespaces/other/pods")
    assert status == 403
    assert body["message"].endswith('in the namespace "other"')
    status, body = await as_sa(h, token, "GET", "/api/v1/pods")
    assert status == 403
    assert body["message"].endswith('in API group "" at the cluster scope')
    status, body = await as_sa(h, token, "GET", "/api/v1/namespaces/default/pods?watch=true")
    assert status == 403
    assert "cannot watch resource" in body["message"]


async def test_a_cluster_role_binding_grants_everywhere(h: Harness) -> None:
    await grant(h, [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}], namespace=None)
    token = await token_for(h)
    for path in ("/api/v1/pods", "/api/v1/namespaces/other/pods"):
        assert (await as_sa(h, token, "GET", path))[0] == 200, path


async def test_subresources_need_their_own_rule(h: Harness) -> None:
    await grant(h, [{"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]}])
    token = await token_for(h)
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    status, created = await as_sa(h, token, "POST", "/api/v1/namespaces/default/pods", pod)
    assert status == 201
    status, body = await as_sa(h, token, "PUT", "/api/v1/namespaces/default/pods/p/status", created)
    assert status == 403
    assert body["message"] == (
        f'pods "p" is forbidden: User "{SA_USER}" cannot update resource "pods/status" '
        'in API group "" in the namespace "default"'
    )
    await grant(
        h,
        [{"apiGroups": [""], "resources": ["*/status"], "verbs": ["update"]}],
        name="status-writer",
    )
    status, _ = await as_sa(h, token, "PUT", "/api/v1/namespaces/default/pods/p/status", created)
    assert status == 200


async def test_resource_names_and_wildcards(h: Harness) -> None:
    await grant(
        h,
        [
            {
                "apiGroups": [""],
                "resources": ["configmaps"],
                "verbs": ["get"],
                "resourceNames": ["a"],
            },
            {"apiGroups": ["*"], "resources": ["leases"], "verbs": ["*"]},
        ],
    )
    for name in ("a", "b"):
        await h.call("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": name}})
    token = await token_for(h)
    assert (await as_sa(h, token, "GET", "/api/v1/namespaces/default/configmaps/a"))[0] == 200
    assert (await as_sa(h, token, "GET", "/api/v1/namespaces/default/configmaps/b"))[0] == 403
    assert (await as_sa(h, token, "GET", "/api/v1/namespaces/default/configmaps"))[0] == 403
    leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
    status, _ = await as_sa(h, token, "POST", leases, {"metadata": {"name": "l"}, "spec": {}})
    assert status == 201


async def test_a_binding_to_a_missing_role_says_so(h: Harness) -> None:
    binding = {
        "metadata": {"name": "dangling"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "nope"},
        "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}],
    }
    await h.call("POST", f"{RBAC}/namespaces/default/rolebindings", binding)
    token = await token_for(h)
    status, body = await as_sa(h, token, "GET", "/api/v1/namespaces/default/pods")
    assert status == 403
    assert body["message"].endswith(
        ': RBAC: [role.rbac.authorization.k8s.io "nope" not found in namespace "default"]'
    )


async def test_groups_and_users_are_subjects_too(h: Harness) -> None:
    status, _ = await h.call(
        "POST",
        f"{RBAC}/clusterroles",
        {
            "metadata": {"name": "r"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}],
        },
    )
    assert status == 201
    binding = {
        "metadata": {"name": "all-sas"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"},
        "subjects": [{"kind": "Group", "name": "system:serviceaccounts:default"}],
    }
    await h.call("POST", f"{RBAC}/clusterrolebindings", binding)
    token = await token_for(h)
    assert (await as_sa(h, token, "GET", "/api/v1/secrets"))[0] == 200


async def test_creating_a_role_that_grants_more_than_the_creator_holds_is_forbidden(
    h: Harness,
) -> None:
    await grant(
        h,
        [
            {
                "apiGroups": ["rbac.authorization.k8s.io"],
                "resources": ["roles", "rolebindings"],
                "verbs": ["create"],
            },
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
        ],
    )
    token = await token_for(h)
    roles = f"{RBAC}/namespaces/default/roles"
    wider = {
        "metadata": {"name": "wider"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "delete"]}],
    }
    status, body = await as_sa(h, token, "POST", roles, wider)
    assert status == 403
    assert body["message"].startswith(
        f'roles.rbac.authorization.k8s.io "wider" is forbidden: user "{SA_USER}"'
    )
    assert 'Resources:["pods"]' in body["message"] and 'Verbs:["delete"]' in body["message"]
    same = {
        "metadata": {"name": "same"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }
    assert (await as_sa(h, token, "POST", roles, same))[0] == 201
    # Binding a role it does not fully hold is forbidden too; binding one it holds is fine.
    await h.call("POST", roles, wider)
    bindings = f"{RBAC}/namespaces/default/rolebindings"
    for role, expected in (("wider", 403), ("same", 201)):
        binding = {
            "metadata": {"name": f"bind-{role}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": "other", "namespace": "default"}],
        }
        assert (await as_sa(h, token, "POST", bindings, binding))[0] == expected, role


async def test_escalate_and_bind_verbs_lift_the_escalation_check(h: Harness) -> None:
    await grant(
        h,
        [
            {
                "apiGroups": ["rbac.authorization.k8s.io"],
                "resources": ["roles"],
                "verbs": ["create", "escalate", "bind"],
            },
            {
                "apiGroups": ["rbac.authorization.k8s.io"],
                "resources": ["rolebindings"],
                "verbs": ["create"],
            },
        ],
    )
    token = await token_for(h)
    role = {
        "metadata": {"name": "big"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
    }
    assert (await as_sa(h, token, "POST", f"{RBAC}/namespaces/default/roles", role))[0] == 201
    binding = {
        "metadata": {"name": "b"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "big"},
        "subjects": [{"kind": "User", "name": "someone"}],
    }
    status, _ = await as_sa(h, token, "POST", f"{RBAC}/namespaces/default/rolebindings", binding)
    assert status == 201


async def test_a_token_dies_with_its_service_account(h: Harness) -> None:
    await grant(h, [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}])
    token = await token_for(h)
    assert (await as_sa(h, token, "GET", "/api/v1/namespaces/default/pods"))[0] == 200
    await h.call("DELETE", "/api/v1/namespaces/default/serviceaccounts/robot")
    assert (await as_sa(h, token, "GET", "/api/v1/namespaces/default/pods"))[0] == 401
    status, body = await h.call(
        "POST", "/api/v1/namespaces/default/serviceaccounts/ghost/token", {"spec": {}}
    )
    assert status == 404, body


async def test_the_audit_records_group_and_user_of_every_request(h: Harness) -> None:
    await grant(h, [{"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["list"]}])
    token = await token_for(h)
    h.audit.reset()
    assert (await as_sa(h, token, "GET", "/apis/events.k8s.io/v1/namespaces/default/events"))[
        0
    ] == 200
    assert (await as_sa(h, token, "GET", "/api/v1/namespaces/default/events"))[0] == 403
    assert (await h.call("GET", "/api/v1/namespaces/default/events"))[0] == 200
    seen = [(r.verb, r.group, r.resource, r.code, r.user) for r in h.audit.requests]
    assert seen == [
        ("list", "events.k8s.io", "events", 200, SA_USER),
        ("list", "", "events", 403, SA_USER),
        ("list", "", "events", 200, "admin"),
    ]
    assert h.audit.count(group="events.k8s.io", user=SA_USER) == 1
    assert h.audit.count(resource="events", code=403) == 1


async def test_control_plane_issues_tokens_and_kubeconfigs() -> None:
    async with EmbeddedControlPlane() as cp:
        with pytest.raises(Exception, match="not found"):
            cp.issue_service_account_token("default", "nobody")
        token = cp.issue_service_account_token("default", "default")  # made by the SA controller
        assert token in cp.kubeconfig_text(token)
        headers = {"Authorization": f"Bearer {token}"}
        async with aiohttp.ClientSession() as session:
            async with session.get(
                f"{cp.url}/api/v1/namespaces/default/pods", headers=headers
            ) as r:
                assert r.status == 403
            async with session.get(f"{cp.url}/api", headers=headers) as r:
                assert r.status == 200  # discovery is open to every authenticated user
        assert cp.audit.count(user="system:serviceaccount:default:default", code=403) == 1


async def test_a_watch_is_audited_when_its_stream_starts(h: Harness) -> None:
    await grant(h, [{"apiGroups": [""], "resources": ["pods"], "verbs": ["watch"]}])
    token = await token_for(h)
    headers = {"Authorization": f"Bearer {token}"}
    url = "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=30"
    async with h.client.get(url, headers=headers) as resp:
        assert resp.status == 200
        # Still streaming, and already in the audit (a real API server's ResponseStarted).
        assert h.audit.count(verb="watch", user=SA_USER, code=200) == 1
    assert h.audit.count(verb="watch", user=SA_USER) == 1
