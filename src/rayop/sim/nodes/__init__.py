"""Fake nodes: the scheduler that places pods on them and the kubelet that runs the pods."""
