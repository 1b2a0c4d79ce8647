"""The RayCronJob controller (KubeRay v1.7, gate ``RayCronJob``, alpha): RayJobs on a schedule.

- ``timing``: which tick is due and when to look again (KubeRay's rule, missed ticks included).
- ``child``: the RayJob of one tick (deterministic name, label, annotation, owner).
- ``reconciler``: one pass (validate, suspend, create the due RayJob, ``lastScheduleTime``).
- ``blueprint``: the controller described once (its watch and dependencies).
"""
