"""NewClusterWithIncrementalUpgrade: a Gateway API route whose weights move step by step.

KubeRay v1.7's incremental upgrade (gate ``RayServiceIncrementalUpgrade``, beta, on by
default). A ``<svc>-gateway`` Gateway and a ``<svc>-httproute`` HTTPRoute route to per-cluster
serve Services (``<cluster>-serve-svc``); the pending cluster's Serve ``target_capacity`` is
raised by ``maxSurgePercent``, the route's weights follow it by ``stepSizePercent`` every
``intervalSeconds``, then the old cluster's capacity is lowered, until the new cluster has all
the traffic and the old none; a spec reverted or changed mid-upgrade rolls traffic back first.

Modules and subpackages:

- ``gateway``: the Gateway API objects (builders, equality, readiness, weights).
- ``mode``: whether a RayService runs this strategy, and its options.
- ``rollback``: when a rollback starts, stops and completes (the step ``check_rollback``).
- ``routes``: the steps that read and write the per-cluster serve Services, the Gateway and the
  HTTPRoute (and delete the last two on suspend).
- ``state``: what a pass knows of the Gateway and HTTPRoute.
- ``status_fold``: traffic, promotion and endpoints folded into the status.
- ``target_capacity``: the next Serve ``target_capacity`` of each cluster.
- ``traffic``: the next route weights (the step schedule).
"""
