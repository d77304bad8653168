"""A kernel on strings (scikit-learn's gallery example on structured data) and its data."""

import numpy as np
from sklearn.base import clone
from sklearn.gaussian_process.kernels import GenericKernelMixin, Hyperparameter, Kernel

__all__ = ["_LABELS", "_QUERIES", "_SEQUENCES", "_Y", "SequenceKernel"]


class SequenceKernel(GenericKernelMixin, Kernel):
    """A convolution kernel over strings, as in scikit-learn's gallery example
    plot_gpr_on_structured_data.py: 1 per pair of equal letters, ``baseline_similarity``
    per pair of different ones."""

    def __init__(self, baseline_similarity=0.5, baseline_similarity_bounds=(1e-5, 1)):
        self.baseline_similarity = baseline_similarity
        self.baseline_similarity_bounds = baseline_similarity_bounds

    @property
    def hyperparameter_baseline_similarity(self):
        return Hyperparameter("baseline_similarity", "numeric", self.baseline_similarity_bounds)

    def _f(self, s1, s2):
        return sum(1.0 if c1 == c2 else self.baseline_similarity for c1 in s1 for c2 in s2)

    def _g(self, s1, s2):
        return sum(0.0 if c1 == c2 else 1.0 for c1 in s1 for c2 in s2)

    def __call__(self, X, Y=None, eval_gradient=False):
        Y = X if Y is None else Y
        K = np.array([[self._f(x, y) for y in Y] for x in X])
        if eval_gradient:
            return K, np.array([[[self._g(x, y)] for y in Y] for x in X])
        return K

    def diag(self, X):
        return np.array([self._f(x, x) for x in X])

    def is_stationary(self):
        return False

    def clone_with_theta(self, theta):
        cloned = clone(self)
        cloned.theta = theta
        return cloned


_SEQUENCES = ["AGCTAG", "AGCTAA", "TTCAGG", "TTCAGA", "CGCGCG", "CGCGTA", "GATTAC", "GATCAC",
              "ACGTAC", "TTTAGC", "CGATCG", "GGCATT"]
_QUERIES = ["AGCTAG", "CCCCCC", "GATTAA", "TAGCTA", "AC"]
_Y = np.array([1.0, 1.2, 2.0, 2.1, 3.0, 3.2, 2.5, 1.5, 1.1, 2.4, 2.9, 1.7])
_LABELS = np.array([0, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 1])
