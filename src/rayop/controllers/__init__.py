"""The Ray controllers in one idiom, their assembly into one operator, and the Ray dashboard client.

Modules and subpackages:

- ``batchscheduler``: KubeRay v1.7's batch scheduler integrations: Volcano, YuniKorn, KAI Scheduler,
  scheduler-plugins, and Kubernetes workload-aware scheduling (the ``KubernetesWAS`` gate).
- ``assembly``: every controller described once (blueprints), and the one function that builds
  the operator from them; the operator's settings, RBAC rules and ``kuberay_*`` metrics.
- ``kit``: the controller kit every controller's pass is built from (opening, watches, own writes,
  intervals, names, labels, ownership).
- ``config``: the operator's configuration: environment options, feature gates, the Configuration
  file, startup checks, the cache filter.
- ``gocompat``: Go-compatible encoding: KubeRay's RayCluster spec hash, bit for bit.
- ``dashboard``: the client of a Ray head's dashboard HTTP API (jobs, Serve applications), its
  transport, errors and models.
- ``raycluster``: the RayCluster controller: KubeRay v1.7's RayCluster reconcile
  (``ray-operator/controllers/ray/raycluster_controller.go``).
- ``raycronjob``: the RayCronJob controller (KubeRay v1.7, gate ``RayCronJob``, alpha): RayJobs on a
  schedule.
- ``rayjob``: the RayJob controller: KubeRay v1.7's RayJob state machine
  (``ray-operator/controllers/ray/rayjob_controller.go``).
- ``rayservice``: the RayService controller: Ray Serve applications on RayClusters with
  zero-downtime upgrades.
- ``webhooks``: KubeRay's validating admission webhooks for RayCluster, RayJob and RayService.
"""
