"""Sample weights of the relevance vector regressor: the EM on whitened rows.

The RVM's Gaussian noise makes a weight exact: ``N(t; y, s2)^w = (2 pi s2)^(-(w - 1)/2)
w^(-1/2) N(t; y, s2 / w)``, so a row of weight ``w`` is the noise ``s2 / w`` on it plus
constants. With ``c_i = w_i^(1/2)`` the design rows ``phi_j(x_i)`` and the targets are scaled
by ``c_i`` (``Phi^T W Phi`` and ``Phi^T W t`` of SSEM paper eqs. 6-7 become the whitened
rows' ``Phi^T Phi`` and ``Phi^T t``), and the likelihood (eq. 11) and MacKay's noise update
(eq. 12) count ``N = sum_i w_i`` rows: with those constants the evidence and every update
are those of the rows repeated ``w_i`` times, for the same library of basis functions (the
repeated rows' library has a centre per copy; see the estimator).
"""

import numpy as np

from ._regression_em import _RegressionEM

__all__ = ["WeightedRegressionEM"]


class WeightedRegressionEM(_RegressionEM):
    """:class:`~._regression_em._RegressionEM` of the rows ``X, t`` with weights ``weight > 0``.

    The other arguments are :class:`~._regression_em._RegressionEM`'s; ``t`` is given
    unscaled.
    """

    def __init__(self, kernel, X, t, *args, weight, **kwargs):
        self.row_scale = np.sqrt(weight)
        super().__init__(kernel, X, t * self.row_scale, *args, **kwargs)
        self.n_eff = float(np.sum(weight))  # the repeated rows
        mean = np.average(t, weights=weight)
        self.t_var = float(np.average((t - mean) ** 2, weights=weight))

    def _design_rows(self, entries):
        return super()._design_rows(entries) * self.row_scale
