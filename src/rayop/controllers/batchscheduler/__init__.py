"""KubeRay v1.7's batch scheduler integrations: Volcano, YuniKorn, KAI Scheduler,
scheduler-plugins, and Kubernetes workload-aware scheduling (the ``KubernetesWAS`` gate).

:mod:`.registry` picks the scheduler from the operator options and is what the controllers
call; one module per scheduler says what it creates and what it adds to pods; :mod:`.gang_size`
holds the replica and resource arithmetic they share (quantities: :mod:`rayop.apimachinery.quantity`).

Modules and subpackages:

- ``gang_size``: how big a Ray cluster's gang is: KubeRay's replica and resource arithmetic on wire
  specs.
- ``interface``: what every batch scheduler integration does (KubeRay's ``BatchScheduler``
  interface).
- ``kai_scheduler``: NVIDIA KAI Scheduler (``--batch-scheduler=kai-scheduler``): a queue label and
  schedulerName.
- ``kubernetes_was``: Kubernetes workload-aware scheduling (the ``KubernetesWAS`` gate):
  ``scheduling.k8s.io/v1alpha2``.
- ``rbac``: the RBAC rules each batch scheduler needs, as KubeRay v1.7's chart grants them.
- ``registry``: which batch scheduler the operator runs with, KubeRay's startup check of that
  choice, and the three calls the controllers make (:func:`submit`, :func:`add_metadata`,
  :func:`cleanup`).
- ``scheduler_plugins``: Kubernetes scheduler-plugins coscheduling
  (``--batch-scheduler=scheduler-plugins``).
- ``volcano``: Volcano (``--batch-scheduler=volcano``): one ``scheduling.volcano.sh/v1beta1``
  PodGroup per gang.
- ``yunikorn``: Apache YuniKorn (``--batch-scheduler=yunikorn``): labels, task groups, no objects of
  its own.
"""
