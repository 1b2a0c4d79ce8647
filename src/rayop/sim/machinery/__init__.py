"""The embedded control plane's shared vocabulary: served resources, metav1 Status errors,
label and field selectors, and Kubernetes timestamps.
"""
