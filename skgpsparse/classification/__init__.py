"""Sparse GP classification: the ADF probit model with greedy basis selection.

:class:`SparseGPClassifier` is the public estimator (``_estimator``): multiclass one-vs-rest
around a binary model (``_binary``: the two-loop design of the validation paper) that keeps an
incremental ADF posterior (``_adf``, with the probit site update of ``_probit`` and the site
optimisation of ``_site_optimization``). Hyperparameter objectives: the NLP loss over the
non-basis points (``_nlp_loss``) and the IVM evidence (``_evidence``); ``_restarts`` chooses
between bias starts on held-out rows.
"""

from ._estimator import SparseGPClassifier

__all__ = ["SparseGPClassifier"]
