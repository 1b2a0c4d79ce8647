"""Rewrites what a container's command names inside the container into what exists here.

A pod's command is written for its image: absolute mount paths (``/home/ray/samples/x.py``),
Service DNS names (``<svc>.<ns>.svc.cluster.local:6379``) and ``bash -l`` (whose
``/etc/profile`` would reset PATH and lose the local Ray). :class:`CommandRewriter` rewrites each
argument (and each env value): mount paths to their directories here, Service names to the pod
IP behind the Service (see :func:`service_names`), and drops the login flag of a leading
``bash -lc``. Text inside a shell line is rewritten where a path or name starts at a word
boundary, so ``ulimit ...; ray start --address=head-svc.ns.svc.cluster.local:6379`` works too.

The env variables in :data:`ADDRESS_ENV` hold ``[scheme://][user@]host:port`` addresses whose
host may be a Service's short name (``redis:6379``, ``redis.ns:6379``), as a pod's DNS search
path resolves it; :func:`rewrite_addresses` puts the pod IP behind such a Service there
(KubeRay's GCS fault-tolerance samples give ``RAY_REDIS_ADDRESS`` as ``redis:6379``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "ADDRESS_ENV",
    "SERVICE_NAME",
    "CommandRewriter",
    "address_services",
    "drop_login_flag",
    "rewrite_addresses",
    "service_names",
]

SERVICE_NAME = re.compile(
    r"(?<![\w.-])([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\.([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\.svc"
    r"(?:\.cluster\.local)?(?![\w-])"
)
"""``<service>.<namespace>.svc[.cluster.local]`` at a word boundary."""

Resolve = Callable[[str, str], "str | None"]
"""``(namespace, service) -> the IP of a pod behind it, or None``."""

_SHELLS = frozenset({"bash", "sh", "dash", "zsh"})

ADDRESS_ENV = frozenset({"RAY_REDIS_ADDRESS"})
"""Env variables whose addresses may name a Service by its short name."""
_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_ADDRESS = re.compile(
    rf"(?P<head>(?:[a-z][a-z0-9+.-]*://)?(?:[^@/]*@)?)(?P<svc>{_LABEL})(?:\.(?P<ns>{_LABEL}))?"
    r"(?P<port>:\d+)"
)


def _short_name(part: str) -> re.Match[str] | None:
    match = _ADDRESS.fullmatch(part.strip())
    return match if match and not match.group("svc").isdigit() else None


def address_services(value: str, namespace: str) -> list[tuple[str, str]]:
    """Returns the ``(namespace, service)`` each short-named address of ``value`` names."""
    matches = (_short_name(part) for part in value.split(","))
    return [(m.group("ns") or namespace, m.group("svc")) for m in matches if m]


def rewrite_addresses(value: str, namespace: str, resolve: Resolve) -> str:
    """Puts the pod IP behind each short-named Service of ``value`` in its place."""
    out = []
    for part in value.split(","):
        match = _short_name(part)
        ip = resolve(match.group("ns") or namespace, match.group("svc")) if match else None
        out.append(f"{match.group('head')}{ip}{match.group('port')}" if match and ip else part)
    return ",".join(out)


def service_names(text: str) -> list[tuple[str, str]]:
    """Returns every ``(namespace, service)`` whose DNS name appears in ``text``."""
    return [(m.group(2), m.group(1)) for m in SERVICE_NAME.finditer(text)]


def drop_login_flag(argv: Sequence[str]) -> list[str]:
    """Turns ``bash -lc ...`` (or ``-lce``, ``-l -c``) into ``bash -c ...``; others unchanged."""
    out = list(argv)
    if not out or os.path.basename(out[0]) not in _SHELLS:
        return out
    for index in range(1, len(out)):
        arg = out[index]
        if not arg.startswith("-") or arg == "--" or arg.startswith("--"):
            break
        if "l" in arg:
            stripped = "-" + arg[1:].replace("l", "")
            out[index] = stripped
    return [a for a in out if a != "-"]


@dataclass(frozen=True)
class CommandRewriter:
    """Maps in-container paths and Service names of one container to this machine.

    Attributes:
        mounts: mountPath -> directory here (the longest matching mount wins).
        resolve: The Service lookup; names it cannot resolve stay as written.
    """

    mounts: Mapping[str, str]
    resolve: Resolve

    def text(self, value: str) -> str:
        """Rewrites the paths and Service names of one argument or env value."""
        return self._paths(self._services(value))

    def argv(self, argv: Sequence[str]) -> list[str]:
        """Rewrites every argument, then drops a leading shell's login flag."""
        return drop_login_flag([self.text(a) for a in argv])

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """Rewrites every env value."""
        return {k: self.text(v) for k, v in env.items()}

    def _services(self, value: str) -> str:
        def sub(match: re.Match[str]) -> str:
            ip = self.resolve(match.group(2), match.group(1))
            return ip if ip else match.group(0)

        return SERVICE_NAME.sub(sub, value)

    def _paths(self, value: str) -> str:
        if "/" not in value:
            return value
        for inside in sorted(self.mounts, key=len, reverse=True):
            root = inside.rstrip("/")
            if not root:
                continue
            host = self.mounts[inside].rstrip("/")
            pattern = re.compile(r"(?<![\w./-])" + re.escape(root) + r"(?=[/\s'\";:)|&]|$)")
            value = pattern.sub(host.replace("\\", "\\\\"), value)
        return value
