"""What the operator's shared cache holds: KubeRay's label filters
(``ray-operator/internal/managercache/cache.go``, v1.7.0).

KubeRay caches only the pods it created (those with a Ray node type) and the batch Jobs it
created (its submitters), so that a busy cluster's other pods cost the operator no memory. The
controller machinery knows nothing of this: :class:`rayop.runtime.manager.Manager` caches
everything unless it is given this config.
"""

from __future__ import annotations

from rayop.api import keys
from rayop.controllers.kit import labels
from rayop.runtime.informers.factory import CacheConfig

RAY_POD_SELECTOR = f"{keys.RAY_NODE_TYPE} in ({labels.HEAD},{labels.WORKER},{labels.REDIS_CLEANUP})"
"""The pods the operator caches: heads, workers and Redis cleanup Jobs' pods."""

SUBMITTER_JOB_SELECTOR = f"{keys.APP_CREATED_BY}={labels.CREATED_BY_VALUE}"
"""The batch Jobs the operator caches: the ones it created."""

KUBERAY_CACHE_CONFIG = CacheConfig(
    label_selectors={"pods": RAY_POD_SELECTOR, "jobs.batch": SUBMITTER_JOB_SELECTOR}
)
"""KubeRay's cache filters (its ``internal/managercache``); pass it to the Manager."""
