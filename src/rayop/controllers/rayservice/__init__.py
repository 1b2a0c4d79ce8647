"""The RayService controller: Ray Serve applications on RayClusters with zero-downtime upgrades.

Entry point: :data:`rayop.controllers.rayservice.blueprint.RAYSERVICE`, the controller described once.

Modules and subpackages:

- ``blueprint``: the ``rayservice`` controller described once (its watches and dependencies).
- ``cleanup``: retires the RayClusters of a RayService that are neither active nor pending.
- ``cluster_builders``: pure builders for the RayClusters of a RayService: names, the spec hash, the
  object itself.
- ``clusters``: steps that choose, create and update the active and pending RayClusters of a
  RayService.
- ``context``: what every RayService reconcile step works with: dependencies and a per-pass context.
- ``dashboards``: builds the dashboard clients a RayService pass uses to reach a cluster's head.
- ``opening_steps``: steps that may end a RayService pass early: own writes, managedBy, deletion,
  validation.
- ``head_label``: keeps the ``ray.io/serve`` label of the active and pending clusters' head pods
  current.
- ``head_pods``: reads a RayCluster's head pod from the cache and talks to its dashboard or Serve
  proxy.
- ``incremental``: NewClusterWithIncrementalUpgrade: a Gateway API route whose weights move step by
  step.
- ``initializing_timeout``: ``ray.io/initializing-timeout``: a RayService that never becomes ready
  fails, as in KubeRay v1.7.
- ``reconciler``: the RayService reconciler: KubeRay v1.7's reconcile as an ordered list of small
  async steps.
- ``serve_cache``: the per-cluster cache of the last serve config each cluster's dashboard accepted.
- ``serve_config``: deploys ``serveConfigV2`` to a cluster's dashboard and reads its applications
  back.
- ``service_builders``: pure builders of the two Services a RayService owns: ``<svc>-head-svc`` and
  the serve service.
- ``services``: points the RayService's head and serve Services at the cluster that is ready to
  serve.
- ``settings``: the RayService controller's fixed names: its identity, label and annotation keys,
  reasons.
- ``status``: the RayService status: application statuses, endpoints, conditions, and writing it.
- ``suspend``: suspending and resuming a RayService (``spec.suspend``), as KubeRay's atomic state
  machine.
"""
