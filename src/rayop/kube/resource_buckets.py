"""One client-side token bucket per API resource, as KubeRay's controller-runtime client has.

controller-runtime's client (v0.24, KubeRay v1.7.0's) talks through one client-go REST client
per GroupVersionKind, made lazily from the manager's rest config
(``pkg/client/client_rest_resources.go`` with ``apiutil.RESTClientForGVK``); the config carries
QPS and Burst but no shared ``RateLimiter`` (KubeRay's ``ray-operator/main.go`` sets only
``QPS`` and ``Burst``), so client-go's ``rest.RESTClientFor`` gives each of them a token bucket of
its own at those figures (``rest/config.go``). Pods, Services, RayClusters (their status
subresource included) and RayJobs each get ``--qps``/``--burst``: a big group's pod creates do
not spend the budget of the status writes. :class:`ResourceBuckets` does the same, keyed by the
request path's group, version and resource (a subresource counts as its resource); a path that
names no resource (``/version``, discovery) uses the client's own bucket.
"""

from __future__ import annotations

from rayop.kube.clock import MONOTONIC, Clock
from rayop.kube.throttle import TokenBucket

__all__ = ["ResourceBuckets", "resource_of_path"]


def resource_of_path(path: str) -> str | None:
    """Returns ``group/version/resource`` (``v1/pods``, ``ray.io/v1/rayclusters``) of an API
    path, or None when the path names no resource."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if len(parts) >= 3 and parts[0] == "api":
        group_version, rest = parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group_version, rest = f"{parts[1]}/{parts[2]}", parts[3:]
    else:
        return None
    if rest and rest[0] == "watch":  # the legacy /watch/ prefix
        rest = rest[1:]
    if len(rest) >= 3 and rest[0] == "namespaces":
        return f"{group_version}/{rest[2]}"
    return f"{group_version}/{rest[0]}" if rest else None


class ResourceBuckets:
    """A token bucket per API resource, each at ``qps`` and ``burst``, made on first use.

    Args:
        default: The bucket of paths that name no resource (the client's own).
        clock: Where the buckets' time comes from.
    """

    def __init__(self, default: TokenBucket, *, clock: Clock = MONOTONIC) -> None:
        self.default = default
        self._clock = clock
        self._buckets: dict[str, TokenBucket] = {}

    def for_path(self, path: str) -> TokenBucket:
        """Returns the bucket of the resource ``path`` names."""
        resource = resource_of_path(path)
        if resource is None:
            return self.default
        bucket = self._buckets.get(resource)
        if bucket is None:
            bucket = TokenBucket(self.default.qps, self.default.burst, clock=self._clock)
            self._buckets[resource] = bucket
        return bucket

    def resources(self) -> list[str]:
        """The resources that have a bucket so far."""
        return sorted(self._buckets)
