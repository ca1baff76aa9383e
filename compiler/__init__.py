"""slo-compiler: declarative SLO and alert specs in, deterministic monitoring config out.

The pipeline flows one way: ``load`` (YAML to documents with source positions), ``check``
(schema and semantic checks to diagnostics), ``model`` (a frozen intermediate
representation), ``targets`` (pure functions from the model to files) and ``write``
(deterministic, atomic output).
"""

__version__ = "0.1.0"
