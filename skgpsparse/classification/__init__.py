"""Sparse GP classification: a GP classifier on a greedily selected basis.

:class:`SparseGPClassifier` (``_estimator``) is the facade: it validates, picks the parts
from its parameters and delegates, one vs rest above two classes. ``_fitting`` builds the
binary models and stores their results, ``_streaming`` is ``partial_fit``, ``_prediction``
the latent moments and probabilities by row blocks, ``_marginal_likelihood`` the estimator's
``log_marginal_likelihood``. The likelihood (``likelihood="probit"`` or any
:class:`skgpsparse.likelihoods.Likelihood`) and the inference engines (ADF on the basis, EP
over every row, the streaming ADF) live below, in :mod:`skgpsparse.likelihoods` and
:mod:`skgpsparse.inference`. The subpackages:

- ``objectives``: the hyperparameter objectives (the validation NLP, the IVM evidence of the
  basis labels, the EP evidence of every label with its length-scale hyperprior);
- ``learning``: the loops of one binary model (``_binary``: the papers' two loops;
  ``_ep_rounds``: the default all-rows posterior; ``_evidence_rounds``: the IVM's rounds;
  bias restarts and the hyperparameter step);
- ``multiclass``: one-vs-rest, independent or with a shared kernel;
- ``partitioned``: the same models fitted on a row store (:mod:`skgpsparse.rows`).
"""

from ._estimator import SparseGPClassifier

__all__ = ["SparseGPClassifier"]
