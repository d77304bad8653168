"""Sparse GP classification: a GP classifier on a greedily selected basis.

:class:`SparseGPClassifier` (``_estimator``) is the facade: it validates, picks the parts
from its parameters and delegates, one vs rest above two classes. ``_fitting`` builds the
binary models and stores their results, ``_streaming`` is ``partial_fit``, ``_prediction``
the probabilities by row blocks, ``_marginal_likelihood`` the estimator's
``log_marginal_likelihood``. The likelihood (``likelihood="probit"`` or any
:class:`skgpsparse.likelihoods.Likelihood`) and the inference engines (ADF on the basis, EP
over every row, the streaming ADF) and each binary model with its learning loops and
objectives (:mod:`skgpsparse.latent`) live below, in :mod:`skgpsparse.likelihoods`,
:mod:`skgpsparse.inference` and :mod:`skgpsparse.latent`. The subpackages:

- ``learning``: bias restarts chosen on held-out rows;
- ``multiclass``: one-vs-rest, independent or with a shared kernel;
- ``partitioned``: the same models fitted on a row store (:mod:`skgpsparse.rows`).
"""

from ._estimator import SparseGPClassifier

__all__ = ["SparseGPClassifier"]
