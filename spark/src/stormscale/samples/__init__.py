"""The metric-sample contract (docs/formats/samples.md): one home for what the sample reader writes
and the aggregation reads.

* :mod:`~stormscale.samples.schema`: the tidy table (columns, Arrow types, one :class:`Sample` row)
  and Parquet output;
* :mod:`~stormscale.samples.names`: the ``metric`` values and which of them are counters;
* :mod:`~stormscale.samples.durations`: the duration grammar (``30s``, ``5m``, ``1h``) of windows and
  steps, shared by the CRD, the operator and the command lines.
"""

from stormscale.samples.durations import parse_duration
from stormscale.samples.schema import KEY, SCHEMA, SERIES, Sample, table, write_parquet

__all__ = ["KEY", "SCHEMA", "SERIES", "Sample", "parse_duration", "table", "write_parquet"]
