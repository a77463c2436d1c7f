"""The sample reader: Prometheus range queries to tidy metric samples (docs/formats/samples.md) in Parquet."""
