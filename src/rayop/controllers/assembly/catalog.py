"""Every controller rayop runs, in the order ``rayop run`` registers them (:data:`CATALOG`).

The order is KubeRay's ``ray-operator/main.go``: RayCluster (and beside it the NetworkPolicy
and mTLS controllers), RayService, RayJob, then RayCronJob.
"""

from __future__ import annotations

from typing import Final, get_args

from rayop.controllers.assembly.blueprint import ControllerBlueprint, Kind
from rayop.controllers.raycluster.blueprint import MTLS, NETWORK_POLICY, RAYCLUSTER
from rayop.controllers.raycronjob.blueprint import RAYCRONJOB
from rayop.controllers.rayjob.blueprint import RAYJOB
from rayop.controllers.rayservice.blueprint import RAYSERVICE

CATALOG: Final[tuple[ControllerBlueprint, ...]] = (
    RAYCLUSTER,
    NETWORK_POLICY,
    MTLS,
    RAYSERVICE,
    RAYJOB,
    RAYCRONJOB,
)

KINDS: Final[tuple[Kind, ...]] = get_args(Kind)
"""Every kind a selection may name."""
