"""The embedded control plane's shared vocabulary: served resources, metav1 Status errors,
selectors, Event conversion, fault injection and the audit.
"""
