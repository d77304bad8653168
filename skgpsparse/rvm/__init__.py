"""Relevance vector machines trained by Subspace EM (or batch EM).

:class:`RelevanceVectorRegressor` (``_regression``: Tipping's RVM, its E- and M-steps on the
active set kept by Cholesky up- and downdates in ``_regression_em``, Tipping and Faul's add
test in ``_add_test``) and :class:`RelevanceVectorClassifier` (``_classification``: a probit
RVM, one vs rest above two classes, its mean-field E-step in ``_mean_field``) share the
candidate basis functions and their rows (``_basis_functions``), and the active design rows,
the MacKay M-step, the SSEM loop and the common parameters' constraints of
``_subspace_em``; ``_factor_cost`` chooses between updating and refactorising the M-step's
factor, and ``_fit_memory`` checks a fit's design rows and ``M x M`` matrices against the
memory available. Each estimator grows and prunes its set of basis functions by the evidence
(``n_basis_functions`` bounds the candidates); fits grow about as n^2 and suit a few
thousand rows.
"""

from ._classification import RelevanceVectorClassifier
from ._regression import RelevanceVectorRegressor

__all__ = ["RelevanceVectorClassifier", "RelevanceVectorRegressor"]
