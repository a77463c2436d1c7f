"""The fleet job: every StormTopology that asks for a published profile (``spec.metrics.profile:
Published``) gets one, computed from a window of Parquet samples by the aggregation (Spark by default,
any master) and applied as a ConfigMap (:mod:`stormscale.aggregation.published`) with server-side apply.

* :mod:`~stormscale.publish.targets`: which StormTopologies, and the Storm topology each names (pure);
* :mod:`~stormscale.publish.kube`: the two Kubernetes calls (list StormTopologies, apply ConfigMaps);
* :mod:`~stormscale.publish.cli`: ``stormscale-publish`` / ``python -m stormscale.publish``.

Needs the ``[publish]`` extra (the Kubernetes client) besides ``[spark]``; the operator image has
neither PySpark nor this package's job.
"""
