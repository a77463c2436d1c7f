"""Stormscale's planner: a pure library, profile in, plan out.

No I/O beyond reading a profile file, no clock, no Kubernetes, no Spark (an import-linter contract
checks it).
"""

from stormscale.planner.demand import DemandDistribution, DemandStatistic, DemandUsed, at_demand
from stormscale.planner.elasticity.model import Level
from stormscale.planner.elasticity.signals import ForecastSlot, forecast_max, linear_forecast
from stormscale.planner.elasticity.units import Choice, Provisioned, SlotPod, change_units
from stormscale.planner.flow import FlowModel, FlowState, evaluate, throughput
from stormscale.planner.model import Component, Kind, Topology, add_allocation
from stormscale.planner.numbers import is_finite_number
from stormscale.planner.optimal import OptimalLimitError
from stormscale.planner.placement.model import Placement
from stormscale.planner.placement.shukla import MappingError
from stormscale.planner.placement.strategies import PlacementStrategy
from stormscale.planner.placement.units import executor_loads, place_units
from stormscale.planner.planning import (
    BEST_CANDIDATES,
    DEFAULT_STRATEGY,
    Plan,
    Strategy,
    best_of,
    compare_strategies,
    make_plan,
    trim_useless_units,
)
from stormscale.planner.profile import (
    ComponentConfidence,
    DemandCheck,
    Profile,
    ProfileConfidence,
    ProfileError,
    WindowConfidence,
    demand_distributions,
    load_profile,
    parse_confidence,
    parse_profile,
    read_profile,
)
from stormscale.planner.sizing.exact import TargetRateError, max_feasible_rate, offered_rate, scaled_to
from stormscale.planner.sizing.strategies import (
    Sizing,
    SizingError,
    SizingStrategy,
    check_units_fit_a_slot,
    size,
)

__all__ = [
    "BEST_CANDIDATES",
    "DEFAULT_STRATEGY",
    "Choice",
    "Component",
    "ComponentConfidence",
    "DemandCheck",
    "DemandDistribution",
    "DemandStatistic",
    "DemandUsed",
    "FlowModel",
    "FlowState",
    "ForecastSlot",
    "Kind",
    "Level",
    "MappingError",
    "OptimalLimitError",
    "Placement",
    "PlacementStrategy",
    "Plan",
    "Profile",
    "ProfileConfidence",
    "ProfileError",
    "Provisioned",
    "Sizing",
    "SizingError",
    "SizingStrategy",
    "SlotPod",
    "Strategy",
    "TargetRateError",
    "Topology",
    "WindowConfidence",
    "add_allocation",
    "at_demand",
    "best_of",
    "change_units",
    "check_units_fit_a_slot",
    "compare_strategies",
    "demand_distributions",
    "evaluate",
    "executor_loads",
    "forecast_max",
    "is_finite_number",
    "linear_forecast",
    "load_profile",
    "make_plan",
    "max_feasible_rate",
    "offered_rate",
    "parse_confidence",
    "parse_profile",
    "place_units",
    "read_profile",
    "scaled_to",
    "size",
    "throughput",
    "trim_useless_units",
]
