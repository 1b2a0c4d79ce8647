"""KubeRay v1.7's RayCluster knowledge as pure functions over wire dicts (no I/O).

The reconciler (not here) reads RayClusters, pods and services from the informer cache as plain
dicts and calls these modules to decide what to create, delete and write:

- ``options``: ``OperatorOptions.from_env()`` — the operator env vars and feature gates.
- ``cluster_spec``: accessors over the RayCluster dict with KubeRay's defaults applied.
- ``names``: pod generateName / deterministic head name, service, ingress, RBAC names; truncation.
- ``labels``: label/annotation keys, pod and service label sets, list selectors.
- ``resources``: Kubernetes quantities and pod resource sums.
- ``command``: the ``ray start`` command, container command and args.
- ``env``: injected env vars (cluster, address, GCS FT, auth).
- ``probes``: injected liveness/readiness probes.
- ``init_container``: the worker ``wait-gcs-ready`` init container.
- ``autoscaler``: the head's autoscaler sidecar.
- ``pods``: ``build_head_pod`` and ``build_worker_pod``.
- ``services``: head, serve and headless worker services; the head Ingress.
- ``rbac``: the autoscaler ServiceAccount, Role and RoleBinding.
- ``spec_hash``: the hash behind ``upgradeStrategy: Recreate``.
- ``pod_health``: unhealthy-pod and readiness rules.
- ``scaling``: per-pass plans for the head and each worker group.
- ``status``: ``calculate_status`` and ``status_changed`` (condition helpers: ``rayop.api.conditions``).
"""
