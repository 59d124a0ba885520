"""The PySpark pipeline: sweeps on Spark, Parquet results, and reading them back.

The only code of groupsim that imports pyspark (``tests/test_layering.py`` enforces it), and
only lazily: importing this package needs neither pyspark nor Java. Install the extra with
``pip install -e ".[spark]"`` (pyspark ≥ 4, pandas < 3, pyarrow; Java 17+).

- :mod:`scenarios.analysis.session`: :func:`~scenarios.analysis.session.make_session` (UI off,
  127.0.0.1 in local mode, quiet logs, executors on the driver's interpreter),
  :func:`~scenarios.analysis.session.spark_problem` (why Spark cannot run here, or ``None``).
- :mod:`scenarios.analysis.pipeline`: :func:`~scenarios.analysis.pipeline.run_sweep` (runs a
  :class:`scenarios.campaigns.sweeps.LoadedSweep` in executors and writes ``runs/``, ``events/``,
  ``aggregates/``), the table schemas.
- :mod:`scenarios.analysis.tables`: :func:`~scenarios.analysis.tables.read_sweep` (the
  tables as Python rows, with Spark or with pyarrow).
- :mod:`scenarios.analysis.arrow`: the Arrow side shared by executors and readers (no
  pyspark).
- :mod:`scenarios.analysis.chaos_spark`:
  :func:`~scenarios.analysis.chaos_spark.run_campaign_on_spark` (``groupsim chaos --master``:
  a chaos campaign's runs in executors, failing runs shrunk there, a ``runs`` table);
  :mod:`scenarios.analysis.chaos_rows`: that table's rows (no pyspark).
"""
