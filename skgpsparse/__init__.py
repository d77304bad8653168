"""Sparse Gaussian process classification and regression for scikit-learn."""

__version__ = "0.1.0.dev0"

__all__ = ["__version__"]
