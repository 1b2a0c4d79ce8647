"""The RayService controller: Ray Serve applications on RayClusters with zero-downtime upgrades.

Entry point: :func:`rayop.controllers.rayservice.setup.setup_rayservice_controller`.
"""
