"""Relevance vector machines trained by Subspace EM (or batch EM).

:class:`RelevanceVectorRegressor` (``_regression``, its E- and M-steps in ``_regression_em``)
and :class:`RelevanceVectorClassifier` (``_classification``, its mean-field E-step in
``_mean_field``) share the active design rows, the MacKay M-step and the SSEM loop of
``_subspace_em``.
"""

from ._classification import RelevanceVectorClassifier
from ._regression import RelevanceVectorRegressor

__all__ = ["RelevanceVectorClassifier", "RelevanceVectorRegressor"]
