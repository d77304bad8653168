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

Likelihood: probit with bias, ``p(y | f) = Phi(y (f + b))`` (``lambda = 1``), ``y in {-1, +1}``.
"""

import warnings

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import log_ndtr, ndtr

from ..kernels import iter_kernel
from ..kernels._columns import KernelColumns, run_chunks
from ..kernels._gradients import row_blocks
from ..linalg import cholesky_append, cholesky_delete
from ._probit import moment_matching
from ._site_optimization import optimize_sites

__all__ = ["ADFState"]

# A candidate whose remaining variance A_jj is below this fraction of max k(x, x) carries no
# information (its column of A is ~0): it is never chosen.
_VAR_TOL = 1e-10
# Working sets of at most this many candidates keep their posterior columns for add().
_KEPT_COLUMNS = 64
# Entries of one kappa x rows block when scoring a working set.
_SCORE_BLOCK_ENTRIES = 1 << 16


class ADFState:
    """The ADF posterior of a binary probit GP classifier over a growing basis set.

    Implements the selection protocol of :mod:`skgpsparse.selection` (``candidates``,
    ``score``, ``sampling_weights``). Criteria of :meth:`score` (lower is better):

    - ``"entropy"``: ``log(1 - nu_j A_jj)``, the change of the posterior entropy at ``j``
      (IVM, Lawrence et al. 2003; additive-model paper §4).
    - ``"info_gain"``: ``-KL(q_new(f_j) || q(f_j))``, minus the information gained at ``j``
      (Seeger et al.); with ``lambda_j = 1 - nu_j A_jj`` and ``f'_j - f_j = alpha_j A_jj``,
      ``2 KL = -log lambda_j + lambda_j - 1 + (f'_j - f_j)^2 / A_jj``. (The additive-model
      paper's §4 prints this sum with the signs of a loss; minimised as printed it would pick
      the least informative point.)
    - ``"nlp"``: NLP eq. (4) over the non-basis points after tentatively adding ``j``
      (validation paper §2.5).
    - ``"nlp_all"``: NLP_a eq. (5) over all ``n`` points after tentatively adding ``j``.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        Prior covariance.
    X : ndarray of shape (n, n_features)
        Training inputs.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    bias : float
        Bias ``b`` of the likelihood.
    max_basis : int
        Capacity: the largest basis size this state can hold.
    chunk_size : int, default=None
        Rows per block when scoring working sets (default: about 2^16 entries per block of
        kappa x rows); the scores do not depend on it.
    site_update : {"moment_matching", "optimize"}, default="moment_matching"
        Sites of an added point by moment matching (eq. (2)) or by NLP minimisation
        (additive-model paper §3, :func:`~._site_optimization.optimize_sites`); with
        ``"optimize"`` the ``"nlp"``/``"nlp_all"`` scores are those of the optimised sites.
    n_threads : int, default=1
        Threads over the row blocks of a scored working set (BLAS should run on one thread
        meanwhile); the scores do not depend on it.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse.classification._adf import ADFState
    >>> X = np.linspace(-2, 2, 20)[:, None]; y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> state = ADFState(RBF(1.0), X, y, 0.0, max_basis=3)
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
        chunk_size=None,
        site_update="moment_matching",
        n_threads=1,
    ):
        self.kernel = kernel
        self.n_threads = n_threads
        self.site_update = site_update
        self._site_cache = {}  # candidate -> optimised (p, m) from the last score() call
        # (J, A_J.) of the last NLP-scored working set: add() takes its column from here
        self._no_columns = (np.zeros(0, dtype=np.intp), np.zeros((0, X.shape[0])))
        self._columns = self._no_columns
        self.X = X
        self._kernel_columns = KernelColumns(kernel, X)
        self.y = np.asarray(y, dtype=float)
        self.bias = float(bias)
        self.chunk_size = chunk_size
        n = X.shape[0]
        self.max_basis = int(max_basis)
        self.k_diag = np.asarray(kernel.diag(X), dtype=float)
        self._var_floor = _VAR_TOL * max(float(np.max(self.k_diag, initial=0.0)), 1e-300)
        self.diag_A = self.k_diag.copy()  # A = K before any site (Algorithm 1, step 2)
        self.f_hat = np.zeros(n)
        self.L = np.zeros((self.max_basis, self.max_basis))
        self.M = np.zeros((self.max_basis, n))
        self.beta = np.zeros(self.max_basis)
        self.basis = np.zeros(self.max_basis, dtype=np.intp)
        self.site_precision = np.zeros(self.max_basis)
        self.site_mean = np.zeros(self.max_basis)
        self.in_basis = np.zeros(n, dtype=bool)
        self.size = 0
        self._candidates = None
        self._scratch = np.empty(n)  # an n-vector for updates and sampling weights

    @property
    def n_samples(self):
        return self.X.shape[0]

    @property
    def basis_indices(self):
        return self.basis[: self.size]

    # ------------------------------------------------------------------ selection protocol
    def candidates(self):
        """Non-basis points whose remaining variance is not ~0 (others carry no information).

        Computed once per basis change (``add`` and ``remove`` reset it); do not modify.
        """
        if self._candidates is None:
            self._candidates = np.flatnonzero(~self.in_basis & (self.diag_A > self._var_floor))
        return self._candidates

    def sampling_weights(self, J):
        """Adaptive sampling, additive-model paper eq. (11): ``1 - Phi(z_j) = Phi(-z_j)``.

        Computed for all rows by blocks (on ``n_threads`` threads: ``ndtr`` costs ~20 ns a
        value), then taken at ``J``.
        """
        J = np.asarray(J, dtype=np.intp)
        weights = self._scratch
        blocks = list(row_blocks(self.X, _SCORE_BLOCK_ENTRIES))

        def work(b):
            rows = blocks[b]
            z = np.add(self.f_hat[rows], self.bias)
            z *= -self.y[rows]
            z /= np.sqrt(1.0 + self.diag_A[rows])
            ndtr(z, out=weights[rows])

        run_chunks(len(blocks), work, self.n_threads)
        return weights[J]

    def score(self, criterion, J):
        """Scores of candidates ``J`` (lower is better), all of ``J`` in one batched computation."""
        J = np.asarray(J, dtype=np.intp).reshape(-1)
        a = np.maximum(self.diag_A[J], 0.0)
        _, _, alpha, nu = moment_matching(self.f_hat[J], a, self.y[J], self.bias)
        if criterion == "entropy":
            # log(1 - nu A) = log((1 + A (1 - c)) / (1 + A)), c = nu (1 + A)
            c = nu * (1.0 + a)
            scores = np.log1p(a * (1.0 - c)) - np.log1p(a)
        elif criterion == "info_gain":
            lam = 1.0 - nu * a  # A'_jj / A_jj
            scores = -0.5 * (-np.log(lam) + lam - 1.0 + alpha**2 * a)
        elif criterion in ("nlp", "nlp_all") and self.site_update == "optimize":
            scores = self._optimized_nlp(J, all_points=criterion == "nlp_all")
        elif criterion in ("nlp", "nlp_all"):
            scores = self._tentative_nlp(J, alpha, nu, all_points=criterion == "nlp_all")
        else:
            raise ValueError(
                f"Unknown criterion {criterion!r} for the classifier; expected one of "
                "'entropy', 'info_gain', 'nlp', 'nlp_all'."
            )
        return np.where(a > self._var_floor, scores, np.inf)

    def _tentative_nlp(self, J, alpha, nu, *, all_points):
        """NLP eq. (4) / NLP_a eq. (5) after adding each ``j in J``, as kappa x rows blocks.

        The blocks are laid out kappa x rows, so that the one BLAS product per block reads the
        p x rows stretch of ``M`` in its own row-major order (3.4x faster than the n x kappa
        layout at n = 1e5, p = 125) and the elementwise chain runs along contiguous rows.
        """
        p, n, k = self.size, self.n_samples, len(J)
        M_J = self.M[:p, J]  # p x kappa
        Z = self._kernel_columns.operand(J)
        # The posterior columns A_J. are kept for add() when the working set is small (the
        # paper's kappa = |u^c| would make them n x n; the memory formula counts n kappa).
        keep = k <= _KEPT_COLUMNS
        columns = np.empty((k, n)) if keep else None
        alpha, nu = alpha[:, None], nu[:, None]
        blocks = list(row_blocks(self.X, self._score_chunk_rows(k)))
        partial = np.zeros((len(blocks), k))

        def work(b):
            rows = blocks[b]
            K = self._kernel_columns.block(rows, Z)  # rows x kappa
            own = (J >= rows.start) & (J < rows.stop)
            own_rows, own_cols = J[own] - rows.start, np.flatnonzero(own)
            K[own_rows, own_cols] = self.k_diag[J[own]]  # the full k(x_j, x_j), as in add()
            # rows A_J. = K_J. - M_J^T M of the posterior covariance (one BLAS product)
            if p:
                T = M_J.T @ self.M[:p, rows]
                np.subtract(K.T, T, out=T)
            else:
                T = np.ascontiguousarray(K.T)
            if keep:
                columns[:, rows] = T
            # additive-model paper eq. (7): f' = f + alpha_j A_.j, diag(A)' = diag(A) - nu_j A_.j^2
            z = alpha * T
            z += self.f_hat[rows] + self.bias
            z *= self.y[rows]
            T *= T
            T *= -nu
            T += self.diag_A[rows]
            np.maximum(T, 0.0, out=T)
            T += 1.0
            np.sqrt(T, out=T)
            z /= T
            loss = log_ndtr(z, out=z)  # minus the loss
            if not all_points:
                loss[:, self.in_basis[rows]] = 0.0
                loss[own_cols, own_rows] = 0.0  # the candidate itself leaves u^c once added
            partial[b] = -loss.sum(axis=1)

        # per-block sums added in block order: the scores do not depend on the threads
        run_chunks(len(blocks), work, self.n_threads)
        total = partial.sum(axis=0)
        if keep:
            self._columns = (J, columns)
        if all_points:
            return total / n
        return total / max(n - p - 1, 1)

    def _score_chunk_rows(self, k):
        """Rows per scoring block: ``chunk_size``, or ~2^16 entries per kappa x rows array
        (the elementwise chain then stays in the core's cache)."""
        return self.chunk_size or max(256, _SCORE_BLOCK_ENTRIES // max(k, 1))

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
        n, p = self.n_samples, self.size
        if all_points:
            weights = np.full((n, 1), 1.0 / n)
        else:
            weights = np.repeat((~self.in_basis)[:, None] / max(n - p - 1, 1), J.size, axis=1)
            weights[J, np.arange(J.size)] = 0.0
        a = np.maximum(self.diag_A[J], 0.0)
        p0, shift, _, _ = moment_matching(self.f_hat[J], a, self.y[J], self.bias)
        prec, mean, loss = optimize_sites(
            T, self.f_hat, self.diag_A, self.y, self.bias, J, p0, self.f_hat[J] + shift, weights
        )
        self._site_cache = {int(j): (pj, mj) for j, pj, mj in zip(J, prec, mean)}
        return loss

    # ------------------------------------------------------------------ updates
    def add(self, j, site_precision=None, site_mean=None):
        """Add training point ``j`` to the basis; sites by moment matching unless given.

        Cost O(n p): one kernel column, one ``(n x p) @ p`` product (eqs. (2)-(3)).
        """
        j = int(j)
        p = self.size
        if p >= self.max_basis:
            raise ValueError(f"The basis is full (max_basis={self.max_basis}).")
        if self.in_basis[j]:
            raise ValueError(f"Point {j} is already in the basis.")
        if site_precision is None and self.site_update == "optimize":
            if j not in self._site_cache:  # chosen without an NLP score: optimise eq. (5)
                self._optimized_nlp(np.array([j]), all_points=True)
            pj, mj = self._site_cache[j]
        elif site_precision is None:
            a_j = max(self.diag_A[j], 0.0)
            prec, shift, _, _ = moment_matching(
                self.f_hat[j : j + 1], np.array([a_j]), self.y[j : j + 1], self.bias
            )
            pj, mj = float(prec[0]), float(self.f_hat[j] + shift[0])
        else:
            pj, mj = float(site_precision), float(site_mean)
        sqrt_p = np.sqrt(pj)
        A_col, k_u = self._posterior_column(j)
        # B grows by [Pi_u^1/2 K_uj sqrt(p_j); 1 + p_j K_jj]; its new row is [l^T, l] with
        # l = sqrt(p_j) M_.j (additive-model paper, below eq. (2)).
        b_col = np.sqrt(self.site_precision[:p]) * k_u * sqrt_p
        cholesky_append(self.L, b_col, 1.0 + pj * self.k_diag[j], size=p, overwrite_L=True)
        l_vec, l_last = self.L[p, :p], self.L[p, p]
        # mu = (sqrt(p_j) K_.j - M^T l) / l = sqrt(p_j) A_.j / l: the new row of M
        mu = self.M[p]
        np.multiply(A_col, sqrt_p / l_last, out=mu)
        # beta grows by (sqrt(p_j) m_j - l^T beta) / l, so that f_hat = M^T beta
        self.beta[p] = (sqrt_p * mj - l_vec @ self.beta[:p]) / l_last
        # eq. (3): diag(A) -= mu^2, f_hat += (new beta entry) mu
        np.multiply(mu, mu, out=self._scratch)
        self.diag_A -= self._scratch
        np.multiply(mu, self.beta[p], out=self._scratch)
        self.f_hat += self._scratch
        self._clip_variances()
        self.basis[p] = j
        self.site_precision[p] = pj
        self.site_mean[p] = mj
        self.in_basis[j] = True
        self.size = p + 1
        self._site_cache = {}
        self._columns = self._no_columns  # the kept A_J. are stale once M has changed
        self._candidates = None

    def _posterior_column(self, j):
        """``A_.j = K_.j - M^T M_.j`` and ``K(X_u, x_j)``, with ``k(x_j, x_j)`` on ``j``.

        ``A_.j`` comes from the last NLP-scored working set if ``j`` was in it (no pass over
        ``M``), else from one kernel column and one ``p x n`` product.
        """
        p = self.size
        J, columns = self._columns
        hit = np.flatnonzero(J == j)
        if hit.size:
            k_u = self._kernel_columns(self.basis[:p], np.array([j]))[:, 0] if p else np.zeros(0)
            return columns[hit[0]], k_u
        k_col = self._kernel_columns(slice(None), np.array([j]))[:, 0]
        k_col[j] = self.k_diag[j]  # k(x_j, x_j) with any WhiteKernel term (kernel(X, Z) drops it)
        k_u = k_col[self.basis[:p]]
        if p:
            k_col -= self.M[:p, j] @ self.M[:p]
        return k_col, k_u

    def remove(self, k):
        """Delete the basis vector at position ``k`` (sites of the others unchanged). O(n p).

        Givens rotations re-triangularise ``L``; the same rotations applied to ``M`` and ``beta``
        leave the departing contribution ``r`` (last row) so that ``diag(A) += r^2`` and
        ``f_hat -= r beta_last``.
        """
        p = self.size
        k = int(k)
        if not 0 <= k < p:
            raise ValueError(f"`k` must be in [0, {p - 1}], got {k}.")
        _, rotations = cholesky_delete(self.L, k, size=p, overwrite_L=True)
        rotations.apply(self.M, overwrite=True)
        rotations.apply(self.beta, overwrite=True)
        r = self.M[p - 1]
        # the departing contribution: A' = K - M'^T M' = A + r r^T, f' = M'^T beta' = f - r beta_p
        self.diag_A += r * r
        self.f_hat -= self.beta[p - 1] * r
        r[:] = 0.0
        self.beta[p - 1] = 0.0
        self.in_basis[self.basis[k]] = False
        for arr in (self.basis, self.site_precision, self.site_mean):
            arr[k : p - 1] = arr[k + 1 : p].copy()
            arr[p - 1] = 0
        self.size = p - 1
        self._site_cache = {}
        self._columns = self._no_columns
        self._candidates = None

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
        s = np.sqrt(self.site_precision[:p])
        u = self.basis[:p]
        # 1 - p_k A_kk = 1 / (1 + p_k A^(-k)_kk) > 0 in exact arithmetic
        den = np.maximum(1.0 - s * G[np.arange(p), u], np.finfo(float).eps)
        coef_f = s * (self.f_hat[u] - self.site_mean[:p]) / den
        total = np.zeros(p)
        step = max(1, self.chunk_size or 2048)
        for start in range(0, n, step):
            cols = slice(start, min(start + step, n))
            Gc = G[:, cols]
            var = self.diag_A[cols] + Gc * Gc / den[:, None]
            f_new = self.f_hat[cols] + coef_f[:, None] * Gc
            z = self.y[cols] * (f_new + self.bias) / np.sqrt(1.0 + np.maximum(var, 0.0))
            total -= log_ndtr(z).sum(axis=1)
        return total / n

    def _clip_variances(self):
        low = float(np.min(self.diag_A))
        if low < 0.0:
            if low < -1e-6 * max(float(np.max(self.k_diag)), 1.0):
                warnings.warn(
                    f"Posterior variances down to {low:.3g} were clipped at 0 (round-off in the "
                    "ADF updates); the kernel may be badly scaled.",
                    RuntimeWarning,
                    stacklevel=3,
                )
            np.maximum(self.diag_A, 0.0, out=self.diag_A)

    # ------------------------------------------------------------------ summaries
    def nlp(self, *, all_points=False):
        """NLP eq. (4) over the non-basis points (eq. (5) over all ``n`` if ``all_points``)."""
        z = self.y * (self.f_hat + self.bias) / np.sqrt(1.0 + self.diag_A)
        loss = -log_ndtr(z)
        if all_points:
            return float(np.mean(loss))
        rest = ~self.in_basis
        return float(np.mean(loss[rest])) if rest.any() else 0.0
