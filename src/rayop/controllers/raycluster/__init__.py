"""The RayCluster controller: KubeRay v1.7's RayCluster reconcile
(``ray-operator/controllers/ray/raycluster_controller.go``).

The pass (I/O: cache reads, API calls, events):

- ``blueprint``: the ``raycluster`` controller described once, and the ``networkpolicy`` and
  ``raycluster-mtls`` controllers that run beside it.
- ``reconciler``: one pass as ordered gate steps and resource steps, then the status step.
- ``context``: the dependencies and the per-pass context (cached object, parsed model, the pass time).
- ``reconcile_steps``: managedBy, validation, deletion; RBAC, ingress, secret, service creation.
- ``redis_cleanup``: the GCS FT Redis cleanup finalizer.
- ``pod_sync``: suspend, Recreate upgrade, head and worker pods under scale expectations.
- ``group_creates``: a big worker group's pod creates in a background creator, outside the pass.
- ``status_sync``: computing and writing the status (never while the cache is behind our write).
- ``events``: KubeRay's event reasons and actions.

What KubeRay builds and decides, as pure functions of the parsed
:class:`~rayop.api.raycluster.RayCluster` (no I/O):

- ``pods``: ``build_head_pod`` and ``build_worker_pod``; ``command``, ``env``, ``probes``,
  ``init_container`` and ``autoscaler`` build their parts.
- ``services``: head, serve and headless worker services; the head Ingress.
- ``rbac``: the autoscaler ServiceAccount, Role and RoleBinding.
- ``resources``: Kubernetes quantities and pod resource sums.
- ``spec_hash``: the hash behind ``upgradeStrategy: Recreate`` (over the wire spec).
- ``pod_health``: unhealthy-pod and readiness rules.
- ``scaling``: per-pass plans for the head and each worker group.
- ``status``: ``calculate_status`` and ``status_changed``.

``builders`` is the facade the RayJob and RayService controllers may import. Names, label sets
and the spec rules shared with them live in :mod:`rayop.controllers.kit`.

Optional features, pod parts and the other steps:

- ``autoscaler``: the Ray autoscaler sidecar KubeRay adds to the head pod when in-tree autoscaling
  is on.
- ``builders``: what the RayJob and RayService controllers may use of the RayCluster controller: the
  head Service builder, its ports, and the auth-token wiring of the head pod.
- ``command``: the ``ray start`` command KubeRay generates from ``rayStartParams`` and container
  resources.
- ``env``: environment variables KubeRay injects into Ray containers.
- ``gcs_storage``: the GCS storage step: the PVC behind the embedded RocksDB GCS fault tolerance
  backend.
- ``history_server``: the history-server collector sidecar exactly as KubeRay v1.7.0 adds it
  (``historyServerOptions``).
- ``ingress_sync``: the ingress step of a RayCluster reconcile: create ``<cluster>-head-ingress``,
  repair drift.
- ``init_container``: the ``wait-gcs-ready`` init container KubeRay adds to worker pods.
- ``mtls``: KubeRay v1.7.0's mTLS (``spec.tlsOptions``, gate ``RayClusterMTLS``) through
  cert-manager.
- ``network_policy``: the NetworkPolicies of a RayCluster exactly as KubeRay v1.7.0 builds them
  (``spec.networkPolicy``).
- ``network_policy_sync``: KubeRay v1.7.0's ``networkpolicy`` controller: the NetworkPolicies of
  each RayCluster.
- ``probes``: liveness and readiness probes KubeRay injects into the Ray container.
- ``route``: the OpenShift Route to the head's dashboard, exactly as KubeRay v1.7.0 makes it.
"""
