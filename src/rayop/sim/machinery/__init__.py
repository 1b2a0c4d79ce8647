"""The embedded control plane's shared vocabulary: served resources, metav1 Status errors,
label and field selectors, and Kubernetes timestamps.

Modules and subpackages:

- ``errors``: metav1 Status error bodies, as kube-apiserver sends them, and the exception that
  carries one.
- ``resources``: the registry of served resources: built-in kinds plus those defined by CRDs.
- ``selectors``: label and field selectors: parsing the query-string forms and matching objects.
- ``timestamps``: Kubernetes wall-clock timestamps: RFC 3339 in whole seconds, UTC, with a ``Z``
  suffix.
"""
