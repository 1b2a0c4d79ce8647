"""Fake nodes: the scheduler that places pods on them, the kubelet that runs the pods, and the
pod statuses it reports at each stage (``pod_status``, pure functions).
"""
