"""Sparse Gaussian process classification and regression for scikit-learn."""

from skgpsparse._classification import SparseGPClassifier
from skgpsparse._regression import SparseGPRegressor
from skgpsparse._rvm_classification import RelevanceVectorClassifier
from skgpsparse._rvm_regression import RelevanceVectorRegressor
from skgpsparse._selection import BaseSelector, GreedySelector, RandomSelector

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
