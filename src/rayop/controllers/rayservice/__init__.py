"""The RayService controller: Ray Serve applications on RayClusters with zero-downtime upgrades.

Entry point: :data:`rayop.controllers.rayservice.blueprint.RAYSERVICE`, the controller described
once.
"""
