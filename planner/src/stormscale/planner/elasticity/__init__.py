"""Multi-level elasticity (the paper of that name): health and overload predicates, node selection, the
table-driven controller with its benchmarking step, proactive mode, LIFO scale-in, noise filter and counter
deltas.
"""
