"""Placement: which executors share a worker slot and a pod.

Seed 001's mappings (DSM, RSM, SAM) and seed 003's bin packing (P-Deployer), all returning a
:class:`~stormscale.planner.placement.model.Placement`.
"""
