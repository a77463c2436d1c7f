"""The aggregation: tidy metric samples (:mod:`stormscale.samples`) → one topology profile per topology.

Two engines compute the same profile with the same estimators and formulas: the single-process one
(:func:`profile_table`, pyarrow + NumPy, what the operator runs in-process; :func:`typed_profile_table`
gives the same profiles as typed values, :class:`~stormscale.planner.Profile`) and the PySpark job
(:mod:`stormscale.aggregation.spark`, the ``[spark]`` extra) for inputs that do not fit in memory.
This module is the public API; the operator imports nothing else of the package. A published profile
(:mod:`~stormscale.aggregation.published`) is the ConfigMap the fleet job writes and the operator reads.
"""

from stormscale.aggregation.aggregates import Aggregates, ComponentStats
from stormscale.aggregation.local import profile_table, typed_profile_table, use_system_allocator
from stormscale.aggregation.params import Params
from stormscale.aggregation.profiles import write_profile
from stormscale.aggregation.published import (
    PublishedError,
    PublishedProfile,
    configmap_name,
    parse_published,
)
from stormscale.aggregation.schema import AggregationError, UnsettledWindowError
from stormscale.aggregation.structure import ComponentSpec, Structure, load_structure, parse_structure

__all__ = [
    "Aggregates",
    "AggregationError",
    "ComponentSpec",
    "ComponentStats",
    "Params",
    "PublishedError",
    "PublishedProfile",
    "Structure",
    "UnsettledWindowError",
    "configmap_name",
    "load_structure",
    "parse_published",
    "parse_structure",
    "profile_table",
    "typed_profile_table",
    "use_system_allocator",
    "write_profile",
]
