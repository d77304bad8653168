"""Sparse GP classification: a probit GP on a greedily selected basis.

:class:`SparseGPClassifier` is the public estimator (``_estimator``): multiclass one-vs-rest
around a binary model. Its default posterior (``posterior="auto"``) is EP over every
training row's probit likelihood with the greedy basis as the inducing set of a FITC prior
(``_all_rows_ep``), the hyperparameters and the bias maximising its evidence between
re-selections (``_all_rows_fit``). ``posterior="basis"`` is the papers' model (``_binary``: the
validation paper's two loops), an incremental ADF posterior on the basis rows (``_adf``, its
per-row arithmetic in ``_adf_rows``, the selection criteria of ``_criteria`` and the site
optimisation of ``_site_optimization``; the likelihood from ``skgpsparse.likelihoods``),
with the NLP loss over the non-basis points (``_nlp_loss``) or the IVM evidence
(``_evidence``) as the hyperparameter objective; ``_restarts`` chooses between bias starts on
held-out rows. A partitioned fit is the same model (``_rows_fit``): the all-rows posterior
learned on the driver over the learning rows, EP over every row on the partitions
(``_rows_all_rows``, ``_partitioned_ep``); the ``"basis"`` model on the partitions
(``_partitioned``).
"""

from ._estimator import SparseGPClassifier

__all__ = ["SparseGPClassifier"]
