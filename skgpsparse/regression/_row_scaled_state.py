"""The selection state on whitened rows: per-row noise and sample weights in the selection.

Row ``i``'s noise ``s2 a_i / w_i`` (:mod:`skgpsparse.regression._row_noise`) is the noise ``s2``
of the whitened row: its kernel column entries ``k(x_i, x_u)``, target and prior variance
scaled by ``c_i = (w_i / a_i)^(1/2)``, ``c_i`` and ``c_i^2``, while ``K_uu`` (the basis side)
is not. :class:`RowScaledState` is the :class:`~._state.RegressionState` of those rows: cost
(2), its forward and exchange criteria, ``D``, ``q`` and the factors ``L``, ``R`` and ``V y``
are the weighted model's (``R R^T = V diag(c^2) V^T + s2 I``, ``V y`` is ``V diag(c^2) y``),
so the predictive factors formed from them are the weighted posterior's. The state's kernel
blocks over the training rows (the append pass, the working sets' columns) come through
``block(rows, Z)`` with ``rows`` a slice, those on the basis (``K_uu``, ``K_uJ``) with an
index array: :class:`_RowScaledColumns` scales the first and leaves the second.
"""

import numpy as np

from ._state import RegressionState

__all__ = ["RowScaledState"]


class _RowScaledColumns:
    """A :class:`~skgpsparse.kernels._columns.KernelColumns` whose blocks over a slice of
    the training rows are scaled row by row by ``scale``; blocks on index arrays (the basis
    rows) are the kernel's own."""

    def __init__(self, columns, scale):
        self.inner, self.scale = columns, scale

    def __getattr__(self, name):  # operand, operand_of_rows, fast, ...
        return getattr(self.inner, name)

    def block(self, rows, Z, out=None):
        K = self.inner.block(rows, Z, out=out)
        if isinstance(rows, slice):
            K *= self.scale[rows, None].astype(K.dtype, copy=False)
        return K

    def __call__(self, rows, J, out=None):
        return self.block(rows, self.inner.operand(J), out=out)


class RowScaledState(RegressionState):
    """:class:`~._state.RegressionState` of the whitened rows of ``X, y`` under ``row_noise``.

    Parameters as :class:`~._state.RegressionState`, with ``row_noise`` a
    :class:`~._row_noise.RowNoise` over the rows of ``X`` (``y`` is given unscaled). The
    jitter is relative to the rows' mean prior variance ``mean k(x_i, x_i)``, as without row
    noise; the log evidence adds the row noise's constant.
    """

    def __init__(self, kernel, X, y, noise_variance, max_basis, *, row_noise, **kwargs):
        self.row_noise = row_noise
        super().__init__(
            kernel, X, row_noise.whiten(np.asarray(y, dtype=float)), noise_variance,
            max_basis, **kwargs,
        )
        scale = row_noise.scale
        self._columns = _RowScaledColumns(self._columns, scale)
        # q = diag(K - V^T V) of the whitened rows; kdiag stays the basis side's k(x_j, x_j)
        self.q = np.clip(self.kdiag * scale**2, 0.0, None)

    def _own_entry_scale(self, J):
        return self.row_noise.scale[J] ** 2

    def _basis_rows(self, K_J):
        """``K_uJ`` from the whitened columns: the basis rows divided by their scales."""
        idx = self._idx[: self.p]
        return K_J[idx] / self.row_noise.scale[idx, None]

    def log_marginal_likelihood(self):
        m = 1 if self.y.ndim == 1 else self.y.shape[1]
        return super().log_marginal_likelihood() + self.row_noise.log_constant(
            self.noise_variance, m
        )

    def mean_squared_residual(self):
        """``sum_i w_i mu_i^2 / a_i / sum_i w_i`` (per target): the repeated rows' mean."""
        m = 1 if self.y.ndim == 1 else self.y.shape[1]
        return float(np.sum(self.residual**2)) / (m * self.row_noise.total_weight)
