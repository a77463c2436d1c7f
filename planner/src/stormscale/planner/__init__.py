"""Stormscale's planner: a pure library, profile in, plan out.

No I/O beyond reading a profile file, no clock, no Kubernetes, no Spark (an import-linter contract
checks it).
"""

from stormscale.planner.flow import FlowModel, FlowState, evaluate, throughput
from stormscale.planner.model import Component, Kind, Topology, add_allocation
from stormscale.planner.numbers import is_finite_number
from stormscale.planner.optimal import OptimalLimitError
from stormscale.planner.planning import Plan, Strategy, compare_strategies, make_plan
from stormscale.planner.profile import (
    ComponentConfidence,
    DemandCheck,
    Profile,
    ProfileConfidence,
    ProfileError,
    WindowConfidence,
    load_profile,
    parse_confidence,
    parse_profile,
    read_profile,
)

__all__ = [
    "Component",
    "ComponentConfidence",
    "DemandCheck",
    "FlowModel",
    "FlowState",
    "Kind",
    "OptimalLimitError",
    "Plan",
    "Profile",
    "ProfileConfidence",
    "ProfileError",
    "Strategy",
    "Topology",
    "WindowConfidence",
    "add_allocation",
    "compare_strategies",
    "evaluate",
    "is_finite_number",
    "load_profile",
    "make_plan",
    "parse_confidence",
    "parse_profile",
    "read_profile",
    "throughput",
]
