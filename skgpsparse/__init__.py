"""Sparse Gaussian process classification and regression for scikit-learn.

The estimators keep a small basis of training points, chosen by greedy forward selection and
refined by backward-deletion exchange, and fit in O(n max_basis^2) time and O(n max_basis)
memory:

- :class:`SparseGPClassifier`: GP classification with the probit likelihood or any
  :class:`skgpsparse.likelihoods.Likelihood` (``likelihood=``); by default EP over every
  training row under a FITC prior on the basis (``posterior="basis"``: the papers' ADF on the
  basis rows); one vs rest above two classes, with a shared kernel or independent fits.
- :class:`SparseGPRegressor`: sparse MAP / projected-process GP regression; by default
  Titsias' variational bound, the basis moved off the rows and the noise calibrated by
  leave-one-out (``hyperparameter_objective="dtc"``: the DTC evidence).
- :class:`RelevanceVectorRegressor`, :class:`RelevanceVectorClassifier`: relevance vector
  machines trained by subspace EM or batch EM.
- :class:`BaseSelector`, :class:`GreedySelector`, :class:`RandomSelector`: the basis-selection
  interface (:mod:`skgpsparse.selection`).

Both sparse GP estimators learn on a subsample above ``learning_rows`` rows and fit the
posterior on every row, take ``partial_fit`` (rows streamed, then forgotten) and fit a dask
array chunked by rows on a ``dask.distributed`` cluster (the ``dask`` extra). The shared core
is :mod:`skgpsparse.linalg` (Cholesky append, delete, update and downdate),
:mod:`skgpsparse.kernels` (kernel blocks and their gradients, chunked),
:mod:`skgpsparse.likelihoods` (what the engines ask of ``p(y | f)``) and
:mod:`skgpsparse.rows` (where the training rows live); the inference engines (ADF on the
basis, EP over every row, the streaming ADF) are in :mod:`skgpsparse.inference`; each
estimator family is a subpackage: ``classification``, ``regression``, ``rvm``.
"""

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
