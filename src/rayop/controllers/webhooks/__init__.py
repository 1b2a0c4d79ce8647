"""KubeRay's validating admission webhooks for RayCluster, RayJob and RayService.

- ``validators``: the three handlers (paths ``/validate-ray-io-v1-<kind>``), answering as
  KubeRay's webhooks do (422 Invalid, ``<Kind>.ray.io "<name>" is invalid: ...``) with the
  checks of :mod:`rayop.api.validation`, the reconcile-time checks;
- ``configuration``: the ValidatingWebhookConfiguration that registers them, as KubeRay's
  manifests do (``failurePolicy: Fail``, ``sideEffects: None``, create and update).
- ``serving``: running the webhooks beside the operator (``ENABLE_WEBHOOKS=true``), as KubeRay does.
"""
