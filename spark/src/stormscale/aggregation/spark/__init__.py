"""The aggregation on PySpark (the ``[spark]`` extra): the same estimators as the single-process engine
as DataFrame steps (:mod:`~stormscale.aggregation.spark.estimators`), run by
:mod:`~stormscale.aggregation.spark.job`."""
