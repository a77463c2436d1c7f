"""Placement: which executors share a worker slot and a pod.

Shukla & Simmhan's mappings (DSM, RSM, SAM) and P-Deployer's bin packing, all returning a
:class:`~stormscale.planner.placement.model.Placement`.
"""
