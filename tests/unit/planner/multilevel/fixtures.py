"""Multi-level elasticity's Table 1 (the DDoS parser) as a configuration table, and a window builder."""

from __future__ import annotations

from stormscale.planner.elasticity.model import (
    AddExecutor,
    AddPod,
    AddWorker,
    Layout,
    minimal_layout,
    notation,
)
from stormscale.planner.elasticity.observation import Observation
from stormscale.planner.elasticity.table import ConfigTable, make_table

PARSER = "parser"
TABLE1_LOG = (
    AddExecutor(PARSER, 0),  # e2@VM1 (e1@VM1 is the minimal configuration)
    AddPod(1),  # VM2
    AddWorker(1),  # its one worker
    AddExecutor(PARSER, 1),  # e3@VM2
    AddExecutor(PARSER, 1),  # e4@VM2
)
TABLE1_NOTATION = ("(1,1)", "(1,2)", "(1,2)+(1,1)", "(1,2)+(1,2)")


def table1() -> ConfigTable:
    """(0,4000] → (1,1); (4000,12000] → (1,2); (12000,14000] → (1,2)+(1,1); (14000,16000] → (1,2)+(1,2)."""
    return make_table(minimal_layout([PARSER]), TABLE1_LOG, [(4000, 0), (12000, 1), (14000, 4), (16000, 5)])


def shape(layout: Layout) -> str:
    return notation(layout, PARSER)


def window(end: float, load: float, period: float = 60.0) -> Observation:
    """A fresh, ready window ending at ``end`` with a measured load."""
    return Observation(window_start=end - period, window_end=end, load=load)
