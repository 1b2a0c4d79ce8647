"""The embedded control plane's shared vocabulary: served resources, metav1 Status errors,
selectors, timestamps, Event conversion, fault injection and the audit.
"""
