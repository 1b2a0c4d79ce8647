"""What the embedded API server does to an object before it is stored: CRD schema pruning,
defaulting and validation (CEL rules too), per-kind defaults, object-meta validation, quotas.

Modules and subpackages:

- ``cel_cost``: the cost bound of CRD CEL rules, worked out before a rule runs.
- ``cel_library``: the Kubernetes CEL functions CRD rules may call beyond standard CEL.
- ``cel_rules``: CRD ``x-kubernetes-validations`` (CEL) rules, compiled per schema and evaluated
  with kube-apiserver's messages (transition rules, ratcheting).
- ``crd_schema``: admission of custom resources against their CRD schema: pruning, defaulting,
  validation.
- ``defaults``: per-kind defaulting done by the API server on create and update (pods, services,
  jobs...).
- ``extended_resource_toleration``: the ExtendedResourceToleration admission plugin: pods that
  request an extended resource tolerate the taint named after it.
- ``field_validation``: the ``fieldValidation`` query parameter: what a write does with fields the
  schema lacks.
- ``object_meta``: object-meta validation kube-apiserver applies to every object: names, labels,
  annotations.
- ``quota_admission``: the ResourceQuota admission plugin: creates over a quota refused (403),
  the others charged to the quotas' ``status.used``.
- ``quota_usage``: what an object uses of a ResourceQuota and which quotas cover it (kube's quota
  evaluators).
- ``webhooks``: validating admission webhooks, called as kube-apiserver calls them
  (admissionregistration/v1).
"""
