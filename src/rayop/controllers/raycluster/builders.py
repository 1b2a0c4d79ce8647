"""What the RayJob and RayService controllers may use of the RayCluster controller: the head
Service builder, its ports, and the auth-token wiring of the head pod (the token itself is read
with :mod:`rayop.controllers.kit.auth_token`).

This facade is the only module of :mod:`rayop.controllers.raycluster` that ``rayjob`` and
``rayservice`` import (an import-linter independence contract holds them to it), so the RayCluster
controller's internals can change without reaching the other two.
"""

from __future__ import annotations

from rayop.controllers.raycluster.env import add_auth_env
from rayop.controllers.raycluster.services import (
    DEFAULT_PORTS,
    ServiceBuildError,
    build_head_service,
    service_ports,
)

__all__ = [
    "DEFAULT_PORTS",
    "ServiceBuildError",
    "add_auth_env",
    "build_head_service",
    "service_ports",
]
