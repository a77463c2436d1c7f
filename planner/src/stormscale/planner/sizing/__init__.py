"""Sizing for a target rate: how many units each component needs to sustain an input rate Ω.

Shukla & Simmhan: the per-task performance model, LSA and MBA; P-Deployer:
the resource consumption model and operator parallelization; and our exact minimum under the
profile model.
"""
