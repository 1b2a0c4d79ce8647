"""What the three controllers share: operator options and feature gates, the settings that
time their requeues, gate checks, RayCluster names, labels and spec accessors, the watches of a Ray controller, RBAC.
"""
