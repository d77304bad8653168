"""Sparse Gaussian process classification and regression for scikit-learn."""

from .classification import SparseGPClassifier
from .regression import SparseGPRegressor
from .rvm import RelevanceVectorClassifier, RelevanceVectorRegressor
from .selection import BaseSelector, GreedySelector, RandomSelector

__version__ = "0.1.0.dev0"

__all__ = [
    "BaseSelector",
    "GreedySelector",
    "RandomSelector",
    "RelevanceVectorClassifier",
    "RelevanceVectorRegressor",
    "SparseGPClassifier",
    "SparseGPRegressor",
    "__version__",
]
