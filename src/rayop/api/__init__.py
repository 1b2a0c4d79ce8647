"""The ray.io/v1 API: typed models of RayCluster, RayJob and RayService, and their CRDs.

Modules and subpackages:

- ``common``: building blocks shared by the ray.io/v1 models: the base model, wire types,
  conditions, time.
- ``conditions``: ``metav1.Condition`` helpers over wire JSON, with apimachinery's
  ``SetStatusCondition`` rules.
- ``crds``: the CustomResourceDefinitions of rayclusters, rayjobs and rayservices, built from our
  models.
- ``cron``: cron schedules as KubeRay v1.7 reads a RayCronJob's: robfig/cron v3's ``ParseStandard``.
- ``field_docs``: the attribute docstrings of a model's fields, read from its source for the CRD
  descriptions.
- ``k8s_schemas``: CRD schemas of the Kubernetes objects the ray.io types embed, as controller-gen
  writes them.
- ``keys``: the label, annotation and finalizer keys KubeRay v1.7 puts on, and reads from, objects.
- ``raycluster``: the ray.io/v1 RayCluster: spec and status models with KubeRay v1.7's wire names
  and defaults.
- ``raycronjob``: the ray.io/v1 RayCronJob: a RayJob template run on a cron schedule (KubeRay v1.7,
  alpha).
- ``rayjob``: the ray.io/v1 RayJob: spec and status models with KubeRay v1.7's wire names and
  defaults.
- ``rayservice``: the ray.io/v1 RayService: spec and status models with KubeRay v1.7's wire names
  and defaults.
- ``schema``: OpenAPI v3 (structural) schemas for CRDs, generated from the pydantic models of this
  package.
- ``v1alpha1``: KubeRay's deprecated ``ray.io/v1alpha1``: served beside ``v1``, never stored.
- ``validation``: semantic checks of RayCluster, RayJob and RayService that the CRD schema lets
  through.
"""
