"""The Kafka part of the test bed: a KRaft broker from Maven Central, a load generator, an offsets
exporter (a stand-in for kafka_exporter), their fixtures.

Importing this package imports nothing: ``make kafka-home`` is standard library only.
"""
