"""The embedded control plane's shared vocabulary: served resources, metav1 Status errors,
field selectors, Kubernetes timestamps, and the Kubernetes version it reports.

Modules and subpackages:

- ``errors``: metav1 Status error bodies, as kube-apiserver sends them, and the exception that
  carries one.
- ``resources``: the registry of served resources: built-in kinds plus those defined by CRDs.
- ``field_selectors``: field selectors (label selectors: :mod:`rayop.apimachinery.labels`): parsing
  the query-string form and matching objects.
- ``kube_version``: the Kubernetes version the plane reports (``/version``, OpenAPI, nodes).
- ``timestamps``: Kubernetes wall-clock timestamps: RFC 3339 in whole seconds, UTC, with a ``Z``
  suffix.
"""
