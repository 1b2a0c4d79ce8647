"""Service-account tokens and RBAC authorization for the embedded API server.

The kubeconfig's admin token stays all-powerful (like a ``system:masters`` client certificate).
A token issued for a ServiceAccount (the TokenRequest subresource, or
:meth:`Rbac.issue_token`) authenticates as ``system:serviceaccount:<namespace>:<name>``; its
requests are allowed only when a Role or ClusterRole bound to it (RoleBinding,
ClusterRoleBinding) has a rule matching the request's API group, resource (``plural`` or
``plural/subresource``), verb and, when the rule lists any, resource name, with ``*``
wildcards as Kubernetes evaluates them. A denial is a 403 worded as kube-apiserver words it.

Privilege escalation is prevented as RBAC does: creating or updating a Role or ClusterRole
needs every permission it grants (or the ``escalate`` verb on it); creating or updating a
binding needs every permission of the role it refers to (or the ``bind`` verb on that role).
Tokens live in memory only: they do not survive a restart of the control plane.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from rayop.apimachinery.objects import Obj
from rayop.sim.machinery import errors as se
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.storage.store import Store

__all__ = [
    "ADMIN_USER",
    "RBAC_GROUP",
    "SERVICE_ACCOUNT_PREFIX",
    "Attributes",
    "Rbac",
    "UserInfo",
    "forbidden_error",
]

ADMIN_USER = "admin"
"""The user name of the kubeconfig's admin token (as the audit records it)."""
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
RBAC_GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True, slots=True)
class UserInfo:
    """An authenticated user.

    Attributes:
        name: The user name (``admin`` or ``system:serviceaccount:<ns>:<name>``).
        groups: The groups it belongs to.
        superuser: Skips authorization (the admin token).
    """

    name: str
    groups: tuple[str, ...] = ()
    superuser: bool = False


ADMIN = UserInfo(ADMIN_USER, ("system:masters", "system:authenticated"), superuser=True)


@dataclass(frozen=True, slots=True)
class Attributes:
    """What a resource request asks to do, as the authorizer sees it.

    Attributes:
        verb: Kubernetes API verb (get, list, watch, create, ..., escalate, bind).
        group: API group ("" for core).
        resource: Plural resource name.
        subresource: "status", "token"... or "".
        namespace: Namespace, or "" at cluster scope.
        name: Object name, or "" for collections.
    """

    verb: str
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""


def service_account_user(namespace: str, name: str) -> UserInfo:
    """Returns the user a ServiceAccount's token authenticates as."""
    return UserInfo(
        f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
    )


def _has(values: Iterable[str], wanted: str) -> bool:
    return any(v == "*" or v == wanted for v in values)


def _resource_matches(resources: Iterable[str], attrs: Attributes) -> bool:
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    for r in resources:
        if r == "*" or r == combined:
            return True
        if attrs.subresource and r == f"*/{attrs.subresource}":
            return True
    return False


def rule_allows(rule: Mapping[str, Any], attrs: Attributes) -> bool:
    """Tells whether one PolicyRule grants the request (resource rules only)."""
    names = rule.get("resourceNames") or []
    return (
        _has(rule.get("verbs") or [], attrs.verb)
        and _has(rule.get("apiGroups") or [], attrs.group)
        and _resource_matches(rule.get("resources") or [], attrs)
        and (not names or attrs.name in names)
    )


def _forbidden_text(user: UserInfo, attrs: Attributes) -> str:
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    scope = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    return (
        f'User "{user.name}" cannot {attrs.verb} resource "{resource}" '
        f'in API group "{attrs.group}" {scope}'
    )


def forbidden_error(user: UserInfo, attrs: Attributes, reason: str = "") -> se.StatusError:
    """Returns the 403 kube-apiserver sends when RBAC denies ``attrs`` to ``user``."""
    qualified = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
    subject = f'{qualified} "{attrs.name}"' if attrs.name else qualified
    message = f"{subject} is forbidden: {_forbidden_text(user, attrs)}"
    if reason:
        message += f": {reason}"
    return se.forbidden(message, resource=attrs.resource, group=attrs.group, name=attrs.name)


@dataclass
class _Token:
    namespace: str
    name: str
    uid: str


@dataclass
class Rbac:
    """Authenticates bearer tokens and authorizes requests against the store's RBAC objects.

    Args:
        store: The store holding ServiceAccounts, Roles, ClusterRoles and their bindings.
        admin_token: The all-powerful token (None: every request is the admin).
    """

    store: Store
    admin_token: str | None
    _tokens: dict[str, _Token] = field(default_factory=dict)

    # ------------------------------------------------------------------ authentication
    def issue_token(self, namespace: str, name: str) -> str:
        """Returns a new bearer token for an existing ServiceAccount (never blocks).

        Raises:
            StatusError: 404 when the ServiceAccount does not exist.
        """
        account = self._service_account(namespace, name)
        if account is None:
            raise se.not_found("serviceaccounts", "", name)
        token = f"rayop-sa.{secrets.token_urlsafe(32)}"
        uid = str((account.get("metadata") or {}).get("uid", ""))
        self._tokens[token] = _Token(namespace, name, uid)
        return token

    def authenticate(self, header: str) -> UserInfo | None:
        """Returns the user an ``Authorization`` header authenticates as, or None (401).

        A service-account token stops working once its ServiceAccount is deleted (or
        replaced by a new one of the same name), as bound tokens do.
        """
        if self.admin_token is None:
            return ADMIN
        if not header.startswith("Bearer "):
            return None
        token = header[7:].strip()
        if secrets.compare_digest(token, self.admin_token):
            return ADMIN
        bound = self._tokens.get(token)
        if bound is None:
            return None
        account = self._service_account(bound.namespace, bound.name)
        if account is None or (account.get("metadata") or {}).get("uid", "") != bound.uid:
            return None
        return service_account_user(bound.namespace, bound.name)

    def _service_account(self, namespace: str, name: str) -> Obj | None:
        info = self.store.resources.get("", "v1", "serviceaccounts")
        return None if info is None else self.store.peek(info, namespace, name)

    # ------------------------------------------------------------------ authorization
    def rules_for(self, user: UserInfo, namespace: str) -> Iterator[Mapping[str, Any]]:
        """Yields every rule that applies to ``user`` in ``namespace`` ("" = cluster-wide only)."""
        for binding in self._objects("clusterrolebindings", None):
            if self._binds(binding, user):
                yield from self._role_rules(binding, "")
        if namespace:
            for binding in self._objects("rolebindings", namespace):
                if self._binds(binding, user):
                    yield from self._role_rules(binding, namespace)

    def allowed(self, user: UserInfo, attrs: Attributes) -> bool:
        """Tells whether ``user`` may do ``attrs`` (the admin always may)."""
        if user.superuser:
            return True
        return any(rule_allows(r, attrs) for r in self.rules_for(user, attrs.namespace))

    def authorize(self, user: UserInfo, attrs: Attributes) -> None:
        """Raises the 403 StatusError unless ``user`` may do ``attrs``."""
        if not self.allowed(user, attrs):
            raise forbidden_error(user, attrs, self._missing_roles_reason(user, attrs.namespace))

    def _objects(self, plural: str, namespace: str | None) -> list[Obj]:
        info = self.store.resources.get(RBAC_GROUP, "v1", plural)
        return [] if info is None else list(self.store.iter_objects(info, namespace))

    def _binds(self, binding: Mapping[str, Any], user: UserInfo) -> bool:
        binding_ns = str((binding.get("metadata") or {}).get("namespace") or "")
        for subject in binding.get("subjects") or []:
            kind, name = subject.get("kind"), subject.get("name")
            if kind == "User" and name == user.name:
                return True
            if kind == "Group" and name in user.groups:
                return True
            if kind == "ServiceAccount":
                ns = subject.get("namespace") or binding_ns
                if user.name == f"{SERVICE_ACCOUNT_PREFIX}{ns}:{name}":
                    return True
        return False

    def _role(self, ref: Mapping[str, Any], namespace: str) -> Obj | None:
        kind, name = ref.get("kind"), str(ref.get("name") or "")
        if kind == "ClusterRole":
            info = self.store.resources.get(RBAC_GROUP, "v1", "clusterroles")
            return None if info is None else self.store.peek(info, None, name)
        if kind == "Role" and namespace:
            info = self.store.resources.get(RBAC_GROUP, "v1", "roles")
            return None if info is None else self.store.peek(info, namespace, name)
        return None

    def _role_rules(self, binding: Mapping[str, Any], namespace: str) -> list[Mapping[str, Any]]:
        role = self._role(binding.get("roleRef") or {}, namespace)
        return list((role or {}).get("rules") or [])

    def _missing_roles_reason(self, user: UserInfo, namespace: str) -> str:
        missing = []
        bindings = [(b, "") for b in self._objects("clusterrolebindings", None)]
        if namespace:
            bindings += [(b, namespace) for b in self._objects("rolebindings", namespace)]
        for binding, ns in bindings:
            ref = binding.get("roleRef") or {}
            if self._binds(binding, user) and self._role(ref, ns) is None:
                kind = str(ref.get("kind", "")).lower()
                where = f' in namespace "{ns}"' if kind == "role" else ""
                missing.append(f'{kind}.{RBAC_GROUP} "{ref.get("name")}" not found{where}')
        return f"RBAC: [{', '.join(missing)}]" if missing else ""

    # ------------------------------------------------------------------ escalation
    def check_escalation(
        self, user: UserInfo, info: ResourceInfo, namespace: str, body: Any
    ) -> None:
        """Refuses a Role/ClusterRole or binding write that would grant what ``user`` lacks.

        Raises:
            StatusError: 403 Forbidden naming the first permission not held.
        """
        if user.superuser or info.group != RBAC_GROUP or not isinstance(body, dict):
            return
        name = str((body.get("metadata") or {}).get("name") or "")
        if info.plural in ("roles", "clusterroles"):
            escalate = Attributes("escalate", RBAC_GROUP, info.plural, "", namespace, name)
            if self.allowed(user, escalate):
                return
            self._require_rules(user, info, namespace, name, body.get("rules") or [])
        elif info.plural in ("rolebindings", "clusterrolebindings"):
            ref = body.get("roleRef") or {}
            role_plural = "clusterroles" if ref.get("kind") == "ClusterRole" else "roles"
            bind = Attributes("bind", RBAC_GROUP, role_plural, "", namespace, str(ref.get("name")))
            if self.allowed(user, bind):
                return
            role = self._role(ref, namespace)
            if role is None:
                return  # a binding to a missing role grants nothing (yet), as in Kubernetes
            self._require_rules(user, info, namespace, name, role.get("rules") or [])

    def _require_rules(
        self,
        user: UserInfo,
        info: ResourceInfo,
        namespace: str,
        name: str,
        rules: Iterable[Mapping[str, Any]],
    ) -> None:
        held = list(self.rules_for(user, namespace))
        for rule in rules:
            for attrs in _expand(rule, namespace):
                if not any(rule_allows(h, attrs) for h in held):
                    raise _escalation_error(user, info, name, attrs)


def _expand(rule: Mapping[str, Any], namespace: str) -> Iterator[Attributes]:
    names = list(rule.get("resourceNames") or []) or [""]
    for group in rule.get("apiGroups") or []:
        for resource in rule.get("resources") or []:
            plural, _, sub = str(resource).partition("/")
            for verb in rule.get("verbs") or []:
                for name in names:
                    yield Attributes(str(verb), str(group), plural, sub, namespace, str(name))


def _escalation_error(
    user: UserInfo, info: ResourceInfo, name: str, missing: Attributes
) -> se.StatusError:
    resource = (
        f"{missing.resource}/{missing.subresource}" if missing.subresource else missing.resource
    )
    names = f" ResourceNames:[{missing.name!r}]" if missing.name else ""
    message = (
        f'{info.plural}.{RBAC_GROUP} "{name}" is forbidden: user "{user.name}" '
        f"(groups={list(user.groups)}) is attempting to grant RBAC permissions not currently "
        f'held:\n{{APIGroups:["{missing.group}"], Resources:["{resource}"],{names} '
        f'Verbs:["{missing.verb}"]}}'
    )
    return se.forbidden(message, resource=info.plural, group=RBAC_GROUP, name=name)
