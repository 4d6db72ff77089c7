"""Evalboard: model evaluation-as-a-service with dynamic, utility-weighted leaderboards."""

__version__ = "0.1.0"

__all__ = ["__version__"]
