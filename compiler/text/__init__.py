"""Formatting shared by the targets: numbers as Prometheus prints them, deterministic YAML."""
