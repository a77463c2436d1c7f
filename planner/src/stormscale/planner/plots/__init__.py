"""Plots of plans and topologies: the data behind each figure (pure) and their drawing.

``curves`` (throughput against budget per strategy) and ``graph`` (the layered topology with units,
utilization and bottlenecks) are pure and import nothing beyond the planner. ``draw`` is the only
module that imports matplotlib, lazily, so that the planner installs and runs without it (an
import-linter contract in ``.importlinter`` checks this); ``pip install 'stormscale-planner[plot]'``
adds it.
"""
