"""The configuration table (the multi-level elasticity paper's §3.1 step 3, Table 1).

Benchmarking only ever adds containers, so every configuration it discovers is a prefix of its
provisioning log: ``C_k = replay(base, log[:steps_k])``. A row holds a workload band::

    C_k supports L  ⇔  lower_k < L ≤ upper_k,   lower_k = upper_{k-1},  lower_0 = 0      (half-open)
    lookup(L)       =  min {k : L ≤ upper_k},   none when L > upper_max (beyond the benchmark)

Going up replays the log "in the order used during benchmarking"; going down pops it (LIFO, §3.1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from stormscale.planner.elasticity.model import Layout, Provision, replay


@dataclass(frozen=True)
class TableRow:
    """``(lower, upper] → C``, with ``C`` the first ``steps`` entries of the provisioning log."""

    lower: float
    upper: float
    steps: int


@dataclass(frozen=True)
class ConfigTable:
    """Rows by increasing ``upper`` and ``steps``; ``base`` is the minimal configuration (§3.1)."""

    base: Layout
    log: tuple[Provision, ...]
    rows: tuple[TableRow, ...]
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.rows:
            raise ValueError("a configuration table needs at least one row")
        for prev, row in zip(self.rows, self.rows[1:], strict=False):
            if not (row.upper > prev.upper and row.steps > prev.steps and row.lower == prev.upper):
                raise ValueError(f"rows must increase and touch: {prev} then {row}")
        if self.rows[-1].steps > len(self.log):
            raise ValueError("a row needs more steps than the log holds")
        replay(self.base, self.log)  # the log must respect the hierarchy's rules

    def layout(self, row: int) -> Layout:
        """``C_row``."""
        return replay(self.base, self.log[: self.rows[row].steps])

    @property
    def upper_max(self) -> float:
        return self.rows[-1].upper


def make_table(
    base: Layout, log: Sequence[Provision], bands: Sequence[tuple[float, int]], notes: Sequence[str] = ()
) -> ConfigTable:
    """A table from ``(upper_k, steps_k)`` pairs; ``lower_k = upper_{k-1}``, ``lower_0 = 0``."""
    rows: list[TableRow] = []
    lower = 0.0
    for upper, steps in bands:
        rows.append(TableRow(lower, upper, steps))
        lower = upper
    return ConfigTable(base, tuple(log), tuple(rows), tuple(notes))


def lookup(table: ConfigTable, load: float) -> int | None:
    """``min {k : L ≤ upper_k}``, ``None`` beyond ``upper_max``."""
    return next((k for k, row in enumerate(table.rows) if load <= row.upper), None)
