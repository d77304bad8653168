"""The sparse (FITC or DTC) prior of the latents at every row under a basis of inducing inputs.

With ``K_uu = L L^T`` and ``V = L^-1 K_uf`` (``p x n``), ``f = V^T w + e``, ``w ~ N(0, I_p)``,
``e ~ N(0, Lambda)``, ``Lambda = diag(K_ff - V^T V)`` (FITC) or 0 (DTC; GPML §8.3.3, Naish-Guzman
and Holden 2008). :class:`SparsePrior` holds ``L``, ``V`` and ``Lambda`` for one kernel; the
engines over every row (:mod:`skgpsparse.inference._ep`, :mod:`skgpsparse.inference._online`) read
them a block of rows at a time, ``V`` through its ``columns``
(:mod:`skgpsparse.inference._row_columns`: held whole, or formed again from the rows in each
pass when it would be large).
"""

import threading
from contextlib import contextmanager

import numpy as np
from scipy.linalg import LinAlgError, cholesky
from sklearn.gaussian_process.kernels import Kernel

from ._row_columns import row_columns

__all__ = ["PRIORS", "SparsePrior", "basis_cholesky", "reusing_priors"]

PRIORS = ("fitc", "dtc")
# Jitter of K_uu relative to its mean diagonal, raised tenfold while the factor fails.
_JITTER = 1e-8


_REUSE = threading.local()


@contextmanager
def reusing_priors():
    """Within it (a context manager or a decorator), a :class:`SparsePrior` of the same kernel,
    rows and basis as the last one built in this thread is that one, not built again.

    A fit builds the prior of its final kernel for its last evidence evaluation, again for the
    predictor and again for the fitted evidence; each is one pass over the kernel block. The
    last prior is released when the outermost block ends.
    """
    outermost = not getattr(_REUSE, "enabled", False)
    _REUSE.enabled = True
    try:
        yield
    finally:
        if outermost:
            _REUSE.enabled, _REUSE.last = False, None


def _same_kernel(a, b):
    """Same kernel class and parameters (floats to rounding: ``exp(log(x))`` may differ from x)."""
    pa, pb = a.get_params(), b.get_params()
    if type(a) is not type(b) or pa.keys() != pb.keys():
        return False
    for key, va in pa.items():
        vb = pb[key]
        if isinstance(va, (str, Kernel)) or isinstance(vb, (str, Kernel)):
            if isinstance(va, str) != isinstance(vb, str) or (isinstance(va, str) and va != vb):
                return False
            continue
        try:
            va, vb = np.asarray(va, dtype=float), np.asarray(vb, dtype=float)
        except (TypeError, ValueError):
            if va is not vb:
                return False
            continue
        if va.shape != vb.shape or not np.allclose(va, vb, rtol=1e-12, atol=0.0):
            return False
    return True


def _reusable(kernel, X, X_u, prior, weights):
    """The last prior built in this thread if reuse is on and it has these arguments."""
    last = getattr(_REUSE, "last", None) if getattr(_REUSE, "enabled", False) else None
    if last is None or last.X is not X or last.prior != prior or last.weights is not weights:
        return None
    if last.X_u.shape != X_u.shape or not np.array_equal(last.X_u, X_u):
        return None
    return last if _same_kernel(last.kernel, kernel) else None


class SparsePrior:
    """The low-rank prior's factors for one kernel: ``L`` (of ``K_uu``), ``V``, ``Lambda``.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    X : ndarray of shape (n, n_features)
        Training rows.
    X_u : ndarray of shape (p, n_features)
        Basis (inducing) inputs.
    prior : {"fitc", "dtc"}
        FITC keeps the diagonal ``Lambda = diag(K_ff - Q_ff)``; DTC sets it to zero.
    L : ndarray of shape (p, p), default=None
        The factor of ``K_uu`` (:func:`basis_cholesky`), when already formed (a row
        partition's prior: the driver factors ``K_uu`` once).
    weights : ndarray of shape (n,), default=None
        Positive weight of each row (``sample_weight``): row ``i`` stands for ``weights[i]``
        copies of itself, each with its own FITC noise ``e`` and its own (equal) site, so
        its sites enter the posterior of ``w`` ``weights[i]`` times
        (:mod:`skgpsparse.inference._ep_passes`). None: every row once.
    """

    def __init__(self, kernel, X, X_u, prior="fitc", L=None, weights=None):
        if prior not in PRIORS:
            raise ValueError(f"`prior` must be one of {PRIORS}, got {prior!r}.")
        reused = _reusable(kernel, X, X_u, prior, weights)
        if reused is not None:
            self.__dict__.update(reused.__dict__)
            self.kernel = kernel
            return
        self.kernel, self.X, self.X_u, self.prior = kernel, X, X_u, prior
        self.weights = weights
        self._factor(kernel, X, X_u, prior, L)
        if getattr(_REUSE, "enabled", False):
            _REUSE.last = self

    def _factor(self, kernel, X, X_u, prior, L=None):
        self.L = basis_cholesky(kernel, X_u) if L is None else L
        # V = L^-1 K_uf by blocks of rows, and diag(Q_ff) = |v_i|^2 for FITC's Lambda
        self.columns, sq_norms = row_columns(kernel, X, X_u, self.L, norms=prior == "fitc")
        if prior == "fitc":
            self.lam = np.maximum(kernel.diag(X) - sq_norms, 0.0)
        else:
            self.lam = np.zeros(X.shape[0])

    @property
    def V(self):
        """``V = L^-1 K_uf`` (``p x n``) whole: the stored array, or a new one formed by a
        pass when the columns are recomputed (the passes read ``columns`` by blocks)."""
        return self.columns.array()


def basis_cholesky(kernel, X_u):
    """Lower factor of ``K_uu + jitter I``, the jitter raised tenfold while the factor fails."""
    K_uu = kernel(X_u)
    scale = max(float(np.mean(np.diag(K_uu))), np.finfo(float).tiny)
    jitter = _JITTER * scale
    for _ in range(8):
        try:
            return cholesky(K_uu + jitter * np.eye(K_uu.shape[0]), lower=True)
        except LinAlgError:
            jitter *= 10.0
    raise LinAlgError(
        "The kernel matrix of the basis is not positive definite even with a jitter of "
        f"{jitter:.3g}: the kernel is degenerate on the basis."
    )
