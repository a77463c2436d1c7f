"""Stormscale aggregation job (PySpark). Filled in by the aggregation issue."""
