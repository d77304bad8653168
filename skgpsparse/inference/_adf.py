"""Incremental ADF posterior of the binary sparse GP classifier: site updates, add, delete, scores.

The approximate posterior of the latent values at the ``n`` training points is
``q(f) = N(f_hat, A)`` with ``A = (K^-1 + Pi)^-1`` and ``f_hat = A Pi m``, where the site
precisions ``Pi`` and means ``m`` are zero off the basis set ``u`` (additive-model paper §2,
validation paper §2.3). It is kept through

- ``L``: lower Cholesky factor of ``B = I + Pi_u^1/2 K_uu Pi_u^1/2`` (``p x p``; ``B >= I``, so
  the factor is never singular, duplicate basis points included);
- ``M = L^-1 Pi_u^1/2 K_u.`` (``p x n``), so that ``A = K - M^T M``. The additive-model paper
  prints ``L^-1 Pi_uu K_u.`` (its footnote 3 / typo); only ``Pi^1/2`` makes ``A = K - M^T M``;
- ``beta = L^-1 Pi_u^1/2 m_u`` (``p``), so that ``f_hat = M^T beta``;
- ``diag(A)`` and ``f_hat`` (``n``), updated in O(n p) per added basis vector by eq. (3).

Storage for ``L``, ``M`` and ``beta`` is preallocated for ``max_basis`` rows, so adding a basis
vector writes one row (no reallocation), and deleting one rotates rows in place
(:func:`skgpsparse.linalg.cholesky_delete`).

The likelihood ``p(y | f + b)`` (the probit by default, ``y in {-1, +1}``) is an object the state
asks (:mod:`skgpsparse.likelihoods`). The per-row arithmetic is
:class:`~skgpsparse.inference._adf_rows.ADFRows`'s, so that the state on row partitions
(:mod:`skgpsparse.inference._adf_partitioned`) runs the same; the criteria are
:mod:`skgpsparse.inference._criteria`'s.

Row weights (``weights``, the classifier's ``sample_weight`` under ``posterior="basis"``): a row
of weight ``c`` stands for ``c`` copies matched together. Its site, when it joins the basis, is
the product of ``c`` copies of the one-copy ADF site (precision ``c p_j``, the same mean ``m_j``:
a power-``c`` ADF update, equal to adding ``c`` repeated rows at once, each against the
posterior before them all); the criteria see that combined site's moments, the adaptive
sampling draws a row with ``c`` times its error probability, and the NLP sums weigh each row's
``-log Z_i`` by ``c`` over the summed weights.
"""

import warnings

import numpy as np
from scipy.linalg import solve_triangular

from ..kernels import iter_kernel
from ..kernels._columns import KernelColumns
from ..linalg import cholesky_append, cholesky_delete
from ._adf_rows import SCORE_BLOCK_ENTRIES, ADFRows
from ._criteria import score_candidates
from ._site_optimization import optimize_sites

__all__ = ["ADFBasis", "ADFState"]

# A candidate whose remaining variance A_jj is below this fraction of max k(x, x) carries no
# information (its column of A is ~0): it is never chosen.
_VAR_TOL = 1e-10


class ADFBasis:
    """The driver's side of the ADF posterior: ``L``, ``beta``, the basis and its sites.

    What does not depend on where the rows live: the selection protocol's :meth:`score`
    (:func:`~skgpsparse.inference._criteria.score_candidates`), the site of an added point (the
    likelihood's moment matching, eq. (2)), the growth of ``L`` and ``beta`` by one basis vector,
    their Givens downdate by a deletion, and the coefficients of the deletion scores. The rows'
    side is :class:`~skgpsparse.inference._adf_rows.ADFRows`: all of them in :class:`ADFState`, one
    partition each in :class:`~skgpsparse.inference._adf_partitioned.PartitionedADFState`.
    """

    def _init_basis(self, max_basis, bias, likelihood, k_max):
        self.likelihood = likelihood
        self.bias = float(bias)
        self.max_basis = pm = int(max_basis)
        self._k_max = float(k_max)
        self._var_floor = _VAR_TOL * max(self._k_max, 1e-300)
        self.L = np.zeros((pm, pm))
        self.beta = np.zeros(pm)
        self.basis = np.zeros(pm, dtype=np.intp)
        self.site_precision = np.zeros(pm)
        self.site_mean = np.zeros(pm)
        self.size = 0
        self._candidates = None
        self.excluded = None  # rows that may not be candidates (exclude_rows)
        self.weights = None  # the rows' weights (module docstring); None: one each

    def exclude_rows(self, rows, excluded=True):
        """Keep the rows ``rows`` out of (or, ``excluded=False``, let them back into) the
        candidates, whatever their variance: a caller's rule (the all-rows posterior's twins
        of a basis row, whose input is already an inducing input)."""
        if self.excluded is None:
            self.excluded = np.zeros(self.n_samples, dtype=bool)
        self.excluded[rows] = excluded
        self._candidates = None

    @property
    def basis_indices(self):
        return self.basis[: self.size]

    def score(self, criterion, J):
        """Scores of candidates ``J`` (lower is better), all of ``J`` in one batched computation
        (the criteria of :mod:`skgpsparse.inference._criteria`)."""
        return score_candidates(self, criterion, J)

    def _score_chunk_rows(self, k):
        """Rows per scoring block: ``chunk_size``, or ~2^16 entries per kappa x rows array
        (the elementwise chain then stays in the core's cache)."""
        return self.chunk_size or max(256, SCORE_BLOCK_ENTRIES // max(k, 1))

    def _nlp_mean(self, total, all_points, J=None):
        """NLP_a eq. (5) (over all ``n``) or eq. (4) (over the ``n - p - 1`` rows outside the
        basis and the candidate) from the sums of ``-log Z``; with weights, over the summed
        weights of those rows (the candidates ``J``'s own left out of eq. (4))."""
        w = self.weights
        if w is None:
            if all_points:
                return total / self.n_samples
            return total / max(self.n_samples - self.size - 1, 1)
        if all_points:
            return total / np.sum(w)
        rest = np.sum(w) - np.sum(w[self.basis_indices]) - (0.0 if J is None else w[J])
        return total / np.maximum(rest, np.min(w))

    def _moment_matched_site(self, f_j, a_j, y_j):
        """``(p_j, m_j)`` of a point with marginal ``N(f_j + b, a_j)``, eq. (2)."""
        prec, shift, _, _ = self.likelihood.site_update(
            np.array([y_j]), np.array([f_j]) + self.bias, np.array([max(a_j, 0.0)])
        )
        return float(prec[0]), float(f_j + shift[0])

    def _check_add(self, j):
        if self.size >= self.max_basis:
            raise ValueError(f"The basis is full (max_basis={self.max_basis}).")
        if self.in_basis[j]:
            raise ValueError(f"Point {j} is already in the basis.")

    def _append_site(self, pj, mj, k_u, k_jj):
        """Grow ``L`` and ``beta`` by the site ``(p_j, m_j)`` of a point with prior covariances
        ``k_u`` to the basis and ``k_jj``; returns the scale of the new row of ``M``.

        ``B`` grows by ``[Pi_u^1/2 K_uj sqrt(p_j); 1 + p_j K_jj]``; its new row is ``[l^T, l]``
        with ``l = sqrt(p_j) M_.j`` (additive-model paper, below eq. (2)). The new row of
        ``M`` is ``(sqrt(p_j) K_j. - l^T M) / l = (sqrt(p_j) / l) A_j.``.
        """
        p = self.size
        sqrt_p = np.sqrt(pj)
        b_col = np.sqrt(self.site_precision[:p]) * k_u * sqrt_p
        cholesky_append(self.L, b_col, 1.0 + pj * k_jj, size=p, overwrite_L=True)
        l_vec, l_last = self.L[p, :p], self.L[p, p]
        # beta grows by (sqrt(p_j) m_j - l^T beta) / l, so that f_hat = M^T beta
        self.beta[p] = (sqrt_p * mj - l_vec @ self.beta[:p]) / l_last
        return sqrt_p / l_last

    def _record_site(self, j, pj, mj):
        p = self.size
        self.basis[p] = j
        self.site_precision[p] = pj
        self.site_mean[p] = mj
        self.size = p + 1
        self._candidates = None

    def _delete_site(self, k):
        """Givens rotations that delete position ``k`` from ``L``, applied to ``beta``."""
        p = self.size
        k = int(k)
        if not 0 <= k < p:
            raise ValueError(f"`k` must be in [0, {p - 1}], got {k}.")
        _, rotations = cholesky_delete(self.L, k, size=p, overwrite_L=True)
        rotations.apply(self.beta, overwrite=True)
        return rotations

    def _drop_site(self, k, arrays=()):
        p = self.size
        self.beta[p - 1] = 0.0
        for arr in (self.basis, self.site_precision, self.site_mean, *arrays):
            arr[k : p - 1] = arr[k + 1 : p].copy()
            arr[p - 1] = 0
        self.size = p - 1
        self._candidates = None

    def _deletion_coefficients(self, G_diag, f_u):
        """``(den, coef)`` of the deletion update for each basis position (see
        :meth:`ADFState.deletion_scores`), from ``G_kk`` and ``f_hat_u``."""
        p = self.size
        s = np.sqrt(self.site_precision[:p])
        # 1 - p_k A_kk = 1 / (1 + p_k A^(-k)_kk) > 0 in exact arithmetic
        den = np.maximum(1.0 - s * G_diag, np.finfo(float).eps)
        return den, s * (f_u - self.site_mean[:p]) / den

    def _warn_clipped(self, low):
        if low < 0.0 and low < -1e-6 * max(self._k_max, 1.0):
            warnings.warn(
                f"Posterior variances down to {low:.3g} were clipped at 0 (round-off in the "
                "ADF updates); the kernel may be badly scaled.",
                RuntimeWarning,
                stacklevel=3,
            )


class ADFState(ADFBasis):
    """The ADF posterior of a binary GP classifier over a growing basis set, rows in memory.

    Implements the selection protocol of :mod:`skgpsparse.selection` (``candidates``,
    ``score``, ``sampling_weights``) with the criteria of :mod:`skgpsparse.inference._criteria`
    (``"entropy"``, ``"info_gain"``, ``"nlp"``, ``"nlp_all"``; lower is better).

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        Prior covariance.
    X : ndarray of shape (n, n_features)
        Training inputs.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    bias : float
        Bias ``b``: the likelihood sees the latent value ``f + b``.
    max_basis : int
        Capacity: the largest basis size this state can hold.
    likelihood : skgpsparse.likelihoods.Likelihood
        ``p(y | f + b)`` (the binary model's ``likelihood``).
    chunk_size : int, default=None
        Rows per block when scoring working sets (default: about 2^16 entries per block of
        kappa x rows); the scores do not depend on it.
    site_update : {"moment_matching", "optimize"}, default="moment_matching"
        Sites of an added point by moment matching (eq. (2)) or by NLP minimisation (additive-model
        paper §3, :func:`~skgpsparse.inference._site_optimization.optimize_sites`); with
        ``"optimize"`` the ``"nlp"``/``"nlp_all"`` scores are those of the optimised sites.
    n_threads : int, default=1
        Threads over the row blocks of a scored working set (BLAS should run on one thread
        meanwhile); the scores do not depend on it.
    weights : ndarray of shape (n,), default=None
        The rows' positive weights (module docstring); None: one each.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse.inference._adf import ADFState
    >>> from skgpsparse.likelihoods import Probit
    >>> X = np.linspace(-2, 2, 20)[:, None]; y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> state = ADFState(RBF(1.0), X, y, 0.0, max_basis=3, likelihood=Probit())
    >>> for j in (2, 17): state.add(j)
    >>> state.size, bool(state.nlp() < np.log(2))
    (2, True)
    """

    def __init__(
        self,
        kernel,
        X,
        y,
        bias,
        max_basis,
        *,
        likelihood,
        chunk_size=None,
        site_update="moment_matching",
        n_threads=1,
        weights=None,
    ):
        self.kernel, self.X, self.chunk_size = kernel, X, chunk_size
        self.site_update, self.n_threads = site_update, n_threads
        self._site_cache = {}  # candidate -> optimised (p, m) from the last score() call
        k_diag = np.asarray(kernel.diag(X), dtype=float)
        self._rows = ADFRows(
            KernelColumns(kernel, X), np.asarray(y, dtype=float), k_diag, int(max_basis)
        )
        self._init_basis(max_basis, bias, likelihood, np.max(k_diag, initial=0.0))
        self.weights = self._rows.weights = weights

    # the rows' arrays (:class:`~skgpsparse.inference._adf_rows.ADFRows`), read-only views of the
    # posterior
    y = property(lambda self: self._rows.y)
    k_diag = property(lambda self: self._rows.k_diag)
    diag_A = property(lambda self: self._rows.diag_A)
    f_hat = property(lambda self: self._rows.f_hat)
    M = property(lambda self: self._rows.M)
    in_basis = property(lambda self: self._rows.in_basis)

    @property
    def n_samples(self):
        return self.X.shape[0]

    # ------------------------------------------------------------------ selection protocol
    def candidates(self):
        """Non-basis points whose remaining variance is not ~0 (others carry no information).

        Computed once per basis change (``add`` and ``remove`` reset it); do not modify.
        """
        if self._candidates is None:
            eligible = ~self.in_basis & (self.diag_A > self._var_floor)
            if self.excluded is not None:
                eligible &= ~self.excluded
            self._candidates = np.flatnonzero(eligible)
        return self._candidates

    def sampling_weights(self, J):
        """Adaptive sampling, additive-model paper eq. (11): the error probability ``1 - Z_j``.

        Computed for all rows by blocks on ``n_threads`` threads, then taken at ``J``.
        """
        weights = self._rows.error_probabilities(
            self.bias, self.likelihood, n_threads=self.n_threads
        )
        return weights[np.asarray(J, dtype=np.intp)]

    def candidate_marginals(self, J, *, tentative=False):
        """``(f_hat_J, diag(A)_J, y_J)`` of the candidates ``J``."""
        return self.f_hat[J], self.diag_A[J], self.y[J]

    def tentative_nlp(self, candidates, *, all_points):
        """NLP eq. (4) / NLP_a eq. (5) after adding each candidate
        (:mod:`skgpsparse.inference._criteria`).

        With ``site_update="optimize"``, each candidate's site minimises it (§3); else its site is
        moment-matched (eq. (2)) and the rows' blocks
        (:meth:`~skgpsparse.inference._adf_rows.ADFRows.tentative_nlp`) run on ``n_threads``
        threads.
        """
        J = candidates.index
        if self.site_update == "optimize":
            return self._optimized_nlp(J, all_points=all_points)
        p = self.size
        total = self._rows.tentative_nlp(
            J, self._rows.columns.operand(J), J, self.k_diag[J], self.M[:p, J],
            candidates.alpha, candidates.nu, self.bias, self.likelihood,
            all_points=all_points, block_rows=self._score_chunk_rows(len(J)),
            n_threads=self.n_threads,
        )
        return self._nlp_mean(total, all_points, J)

    def posterior_columns(self, J):
        """Columns ``A_.J = K_.J - M^T M_.J`` of the posterior covariance, shape (n, len(J))."""
        J = np.asarray(J, dtype=np.intp).reshape(-1)
        p = self.size
        T = np.empty((self.n_samples, J.size))
        for rows, K in iter_kernel(self.kernel, self.X, self.X[J], chunk_size=self.chunk_size):
            own = (J >= rows.start) & (J < rows.stop)
            K[J[own] - rows.start, np.flatnonzero(own)] = self.k_diag[J[own]]
            T[rows] = K - self.M[:p, rows].T @ self.M[:p, J] if p else K
        return T

    def _optimized_nlp(self, J, *, all_points):
        """Eq. (5) / eq. (4) after adding each ``j in J`` with its NLP-optimised site (§3)."""

        T = self.posterior_columns(J)
        n, p, w = self.n_samples, self.size, self.weights
        if w is None and all_points:
            weights = np.full((n, 1), 1.0 / n)
        elif w is None:
            weights = np.repeat((~self.in_basis)[:, None] / max(n - p - 1, 1), J.size, axis=1)
            weights[J, np.arange(J.size)] = 0.0
        elif all_points:  # each row's -log Z counted c times (module docstring)
            weights = (w / np.sum(w))[:, None]
        else:
            weights = np.repeat((~self.in_basis * w)[:, None], J.size, axis=1)
            weights /= np.maximum(np.sum(weights, axis=0) - w[J], np.min(w))
            weights[J, np.arange(J.size)] = 0.0
        a = np.maximum(self.diag_A[J], 0.0)
        p0, shift, _, _ = self.likelihood.site_update(self.y[J], self.f_hat[J] + self.bias, a)
        prec, mean, loss = optimize_sites(
            T, self.f_hat, self.diag_A, self.y, self.bias, J, p0, self.f_hat[J] + shift, weights,
            likelihood=self.likelihood,
        )
        self._site_cache = {int(j): (pj, mj) for j, pj, mj in zip(J, prec, mean)}
        return loss

    # ------------------------------------------------------------------ updates
    def add(self, j, site_precision=None, site_mean=None):
        """Add training point ``j`` to the basis; sites by moment matching unless given.

        Cost O(n p): one kernel column, one ``(n x p) @ p`` product (eqs. (2)-(3)).
        """
        j = int(j)
        self._check_add(j)
        p = self.size
        if site_precision is None and self.site_update == "optimize":
            if j not in self._site_cache:  # chosen without an NLP score: optimise eq. (5)
                self._optimized_nlp(np.array([j]), all_points=True)
            pj, mj = self._site_cache[j]
        elif site_precision is None:
            pj, mj = self._moment_matched_site(self.f_hat[j], self.diag_A[j], self.y[j])
            if self.weights is not None:  # c copies matched together: c times the precision
                pj *= float(self.weights[j])
        else:
            pj, mj = float(site_precision), float(site_mean)
        # A_.j from the last NLP-scored working set if j was in it, else one kernel column
        column, k_u = self._rows.posterior_column(
            j, self._rows.columns.operand(np.array([j])), j, self.k_diag[j], self.M[:p, j],
            kernel_at=self.basis[:p],
        )
        if k_u is None:
            k_u = self._rows.columns(self.basis[:p], np.array([j]))[:, 0] if p else np.zeros(0)
        scale = self._append_site(pj, mj, k_u, self.k_diag[j])
        # eq. (3): diag(A) -= mu^2, f_hat += (new beta entry) mu
        self._warn_clipped(self._rows.append_row(p, column, scale, self.beta[p], j))
        self._record_site(j, pj, mj)
        self._site_cache = {}

    def remove(self, k):
        """Delete the basis vector at position ``k`` (sites of the others unchanged). O(n p).

        Givens rotations re-triangularise ``L``; the same rotations applied to ``M`` and ``beta``
        leave the departing contribution ``r`` (last row) so that ``diag(A) += r^2`` and
        ``f_hat -= r beta_last``.
        """
        rotations = self._delete_site(k)
        p, k = self.size, int(k)
        self._rows.remove_row(rotations, p, self.beta[p - 1], int(self.basis[k]))
        self._drop_site(k)
        self._site_cache = {}

    def deletion_scores(self):
        """NLP_a eq. (5) after deleting each basis vector (others' sites fixed), batched.

        Removing site ``k`` from ``A = (K^-1 + Pi)^-1`` is the rank-one update
        ``A' = A + p_k A_.k A_k.^T / (1 - p_k A_kk)``, ``f' = f + p_k (f_k - m_k) A_.k /
        (1 - p_k A_kk)``. With ``B = I + S K_uu S`` one has ``A_.u S = M^T L^-1``, so the rows of
        ``G = L^-T M`` are ``sqrt(p_k) A_k.``: one triangular solve scores all ``p`` deletions,
        O(n p^2), no kernel evaluation.

        Returns
        -------
        scores : ndarray of shape (size,)
            NLP_a after deleting the basis vector at each position (lower is better).
        """
        p, n = self.size, self.n_samples
        if not p:
            return np.zeros(0)
        G = solve_triangular(self.L[:p, :p], self.M[:p], lower=True, trans="T")
        u = self.basis[:p]
        den, coef_f = self._deletion_coefficients(G[np.arange(p), u], self.f_hat[u])
        total = self._rows.deletion_losses(
            G, den, coef_f, self.bias, self.likelihood, block_rows=max(1, self.chunk_size or 2048)
        )
        return total / (n if self.weights is None else np.sum(self.weights))

    # ------------------------------------------------------------------ summaries
    def nlp(self, *, all_points=False):
        """NLP eq. (4) over the non-basis points (eq. (5) over all ``n`` if ``all_points``)."""
        loss = self._rows.losses(self.bias, self.likelihood)
        w = self.weights
        if all_points:
            return float(np.mean(loss) if w is None else np.average(loss, weights=w))
        rest = ~self.in_basis
        if not rest.any():
            return 0.0
        return float(np.mean(loss[rest]) if w is None else np.average(loss[rest], weights=w[rest]))
