"""Bayesian calibrators (PyMC models, imported only when a model is built)."""
