"""Stormscale's planner: a pure library, profile in, plan out.

No I/O beyond reading a profile file, no clock, no Kubernetes, no Spark (an import-linter contract
checks it).
"""

from stormscale.planner.flow import FlowModel, FlowState, evaluate, throughput
from stormscale.planner.model import Component, Kind, Topology, add_allocation
from stormscale.planner.optimal import OptimalLimitError
from stormscale.planner.planning import Plan, Strategy, compare_strategies, make_plan
from stormscale.planner.profile import ProfileError, load_profile, parse_profile

__all__ = [
    "Component",
    "FlowModel",
    "FlowState",
    "Kind",
    "OptimalLimitError",
    "Plan",
    "ProfileError",
    "Strategy",
    "Topology",
    "add_allocation",
    "compare_strategies",
    "evaluate",
    "load_profile",
    "make_plan",
    "parse_profile",
    "throughput",
]
