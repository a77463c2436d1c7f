"""The Storm part of the test bed: STORM_HOME from Maven Central, the daemons' launch specs, the
cluster (ZooKeeper, Nimbus, Supervisors), benchmark topologies, their fixtures.

Importing this package imports nothing: ``make storm-home`` is standard library only.
"""
