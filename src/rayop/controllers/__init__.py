"""The RayCluster, RayJob and RayService reconcilers and the Ray dashboard client.

Modules and subpackages:

- ``batchscheduler``: KubeRay v1.7's batch scheduler integrations: Volcano, YuniKorn, KAI Scheduler,
  scheduler-plugins, and Kubernetes workload-aware scheduling (the ``KubernetesWAS`` gate).
- ``common``: what the three controllers share: operator options and feature gates, the settings
  that time their requeues, gate checks, RayCluster names, labels and spec accessors, registration,
  RBAC.
- ``dashboard``: the client of a Ray head's dashboard HTTP API (jobs, Serve applications), its
  transport, errors and models.
- ``operator``: assembles the operator: one client, one manager, and the Ray controllers on it.
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
