"""The ADF posterior's per-row arrays and the arithmetic on them, wherever the rows live.

The ADF posterior of the basis (:mod:`skgpsparse.inference._adf`) keeps, for each training row
``i``, its posterior mean ``f_hat_i`` and variance ``A_ii``, its column of
``M = L^-1 Pi_u^1/2 K_u.``, its label and ``k(x_i, x_i)``. :class:`ADFRows` holds these arrays for
a set of rows (every row of an in-memory fit, or one partition of a row store) and does every
per-row computation of the engine on them: the tentative NLP of a working set (additive-model paper
eq. (7)), a new row of ``M`` with the update of eq. (3), the Givens rotations of a deletion, the
NLP after each deletion, the adaptive sampling weights (eq. (11)) and the NLP (eq. (4) / (5)).
:class:`~skgpsparse.inference._adf.ADFState` calls them over all its rows,
:class:`~skgpsparse.inference._adf_partitioned.PartitionedADFState` on each partition over the
partition's rows; the driver's ``p x p`` work (the factor ``L``, ``beta``, the sites) is theirs.

The likelihood is asked for everything that concerns ``p(y | f)``
(:class:`~skgpsparse.likelihoods.Likelihood`); the bias ``b`` is a shift of the latent value,
passed as ``mean = f_hat + b``.
"""

import numpy as np

from ..kernels._columns import run_chunks
from ..kernels._gradients import row_blocks

__all__ = ["ADFRows", "KEPT_COLUMNS", "SCORE_BLOCK_ENTRIES"]

# Working sets of at most this many candidates keep their posterior columns for the add.
KEPT_COLUMNS = 64
# Entries of one block of an elementwise pass (kappa x rows when scoring a working set).
SCORE_BLOCK_ENTRIES = 1 << 16


class ADFRows:
    """The per-row arrays of the ADF posterior over some rows, and the per-row arithmetic.

    Parameters
    ----------
    columns : skgpsparse.kernels._columns.KernelColumns
        Kernel columns over these rows (``columns.X`` are the rows).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    k_diag : ndarray of shape (n,)
        ``k(x, x)`` of the rows (with any white-noise term).
    max_basis : int
        Rows of ``M`` to allocate.

    Attributes
    ----------
    diag_A, f_hat : ndarray of shape (n,)
        Posterior variances and means, ``A = K`` and ``f_hat = 0`` before any site.
    M : ndarray of shape (max_basis, n)
        The rows' columns of ``M`` (the first ``p`` rows are in use).
    in_basis : ndarray of shape (n,), dtype=bool
    kept : tuple or None
        ``(J, A_J.)`` of the last NLP-scored working set, if small: the add reads its column.
    """

    def __init__(self, columns, y, k_diag, max_basis):
        n = columns.X.shape[0]
        self.columns = columns
        self.y = y
        self.k_diag = k_diag
        self.diag_A = k_diag.copy()  # A = K before any site (Algorithm 1, step 2)
        self.f_hat = np.zeros(n)
        self.M = np.zeros((max_basis, n))
        self.in_basis = np.zeros(n, dtype=bool)
        self.kept = None
        self._scratch = np.empty(n)  # an n-vector for the updates
        self.weights = None  # the rows' weights (ADFState's); None: one each

    @property
    def n(self):
        return self.f_hat.shape[0]

    # ------------------------------------------------------------------ scoring
    def tentative_nlp(self, J, Z, own, k_diag_J, M_J, alpha, nu, bias, likelihood, *,
                      all_points, block_rows, n_threads=1):
        """Sums of ``-log Z_i`` over these rows after adding each candidate, eq. (7).

        Adding candidate ``j`` with moments ``(alpha_j, nu_j)`` (eq. (2)) moves every row to
        ``f' = f + alpha_j A_.j`` and ``diag(A)' = diag(A) - nu_j A_.j^2``. The posterior rows
        ``A_J. = K_J. - M_J^T M`` are formed by blocks of ``block_rows`` rows, laid out
        kappa x rows, so that the one BLAS product per block reads the p x rows stretch of
        ``M`` in its own row-major order (3.4x faster than the n x kappa layout at n = 1e5,
        p = 125) and the elementwise chain runs along contiguous rows.

        Parameters
        ----------
        J : ndarray of shape (kappa,)
            The candidates (global indices; kept with their columns).
        Z : ndarray
            The candidates' kernel operand (:meth:`KernelColumns.operand`).
        own : ndarray of shape (kappa,)
            Each candidate's index among these rows, -1 if it is not one of them.
        k_diag_J, M_J : ndarray of shape (kappa,), (p, kappa)
            The candidates' ``k(x_j, x_j)`` and columns of ``M``.
        alpha, nu : ndarray of shape (kappa,)
            The candidates' site moments (eq. (2)).
        bias : float
        likelihood : skgpsparse.likelihoods.Likelihood
        all_points : bool
            NLP_a eq. (5) over every row, else eq. (4): basis rows and the candidate itself
            left out.
        block_rows : int
            Rows per block (the sums do not depend on it beyond rounding).
        n_threads : int, default=1
            Threads over the blocks; the sums do not depend on it.

        Returns
        -------
        ndarray of shape (kappa,)
        """
        k, p = len(J), M_J.shape[0]
        # the posterior columns A_J. are kept for the add when the working set is small (the
        # paper's kappa = |u^c| would make them n x n; the memory formula counts n kappa)
        columns = np.empty((k, self.n)) if k <= KEPT_COLUMNS else None
        alpha, nu = alpha[:, None], nu[:, None]
        blocks = list(row_blocks(self.columns.X, block_rows))
        partial = np.zeros((len(blocks), k))

        def work(b):
            rows = blocks[b]
            K = self.columns.block(rows, Z)  # rows x kappa
            mine = (own >= rows.start) & (own < rows.stop)
            own_rows, own_cols = own[mine] - rows.start, np.flatnonzero(mine)
            K[own_rows, own_cols] = k_diag_J[mine]  # the full k(x_j, x_j), as in the add
            # rows A_J. = K_J. - M_J^T M of the posterior covariance (one BLAS product)
            if p:
                T = M_J.T @ self.M[:p, rows]
                np.subtract(K.T, T, out=T)
            else:
                T = np.ascontiguousarray(K.T)
            if columns is not None:
                columns[:, rows] = T
            # additive-model paper eq. (7): f' = f + alpha_j A_.j, diag(A)' = diag(A) - nu_j A_.j^2
            mean = alpha * T
            mean += self.f_hat[rows] + bias
            T *= T
            T *= -nu
            T += self.diag_A[rows]
            log_z = likelihood.log_predictive(self.y[rows], mean, T, overwrite=True)
            if not all_points:
                log_z[:, self.in_basis[rows]] = 0.0
                log_z[own_cols, own_rows] = 0.0  # the candidate itself leaves u^c once added
            partial[b] = -(log_z.sum(axis=1) if self.weights is None
                           else log_z @ self.weights[rows])

        # per-block sums added in block order: the sums do not depend on the threads
        run_chunks(len(blocks), work, n_threads)
        self.kept = None if columns is None else (np.asarray(J), columns)
        return partial.sum(axis=0)

    def error_probabilities(self, bias, likelihood, *, n_threads=1):
        """Adaptive sampling weights of every row, additive-model paper eq. (11): ``1 - Z_i``.

        By blocks of rows on ``n_threads`` threads (the probit's costs ~20 ns a value), into
        a scratch array that the next call overwrites.
        """
        weights = self._scratch
        blocks = list(row_blocks(self.columns.X, SCORE_BLOCK_ENTRIES))

        def work(b):
            rows = blocks[b]
            weights[rows] = likelihood.error_probability(
                self.y[rows], np.add(self.f_hat[rows], bias), self.diag_A[rows]
            )
            if self.weights is not None:  # a row of weight c: c copies to draw from
                weights[rows] *= self.weights[rows]

        run_chunks(len(blocks), work, n_threads)
        return weights

    def losses(self, bias, likelihood):
        """``-log Z_i`` of every row under its marginal ``N(f_hat_i + b, A_ii)`` (eq. (4))."""
        return -likelihood.log_predictive(self.y, self.f_hat + bias, self.diag_A)

    def deletion_losses(self, G, den, coef_f, bias, likelihood, *, block_rows=2048):
        """Sums of ``-log Z_i`` over these rows after deleting each basis vector.

        Deleting site ``k`` is the rank-one update ``diag(A)' = diag(A) + G_k.^2 / den_k``,
        ``f' = f + coef_k G_k.`` (:meth:`~skgpsparse.inference._adf.ADFState.deletion_scores`),
        with ``G`` these rows' columns of ``L^-T M``.
        """
        total = np.zeros(G.shape[0])
        for start in range(0, self.n, block_rows):
            cols = slice(start, min(start + block_rows, self.n))
            Gc = G[:, cols]
            var = self.diag_A[cols] + Gc * Gc / den[:, None]
            mean = self.f_hat[cols] + coef_f[:, None] * Gc + bias
            log_z = likelihood.log_predictive(self.y[cols], mean, var, overwrite=True)
            total -= log_z.sum(axis=1) if self.weights is None else log_z @ self.weights[cols]
        return total

    # ------------------------------------------------------------------ updates
    def posterior_column(self, j, Z_j, own_j, k_diag_j, M_j, *, kernel_at=None):
        """``A_.j = K_.j - M^T M_.j`` over these rows, and ``K(X[kernel_at], x_j)``.

        The column is the kept one if ``j`` was in the last NLP-scored working set (no pass
        over ``M``; the kernel values are then None), else one kernel column (``k(x_j,
        x_j)`` at ``own_j``, with any white-noise term that ``kernel(X, Z)`` drops) and one
        ``p x n`` product.
        """
        if self.kept is not None:
            hit = np.flatnonzero(self.kept[0] == j)
            if hit.size:
                return self.kept[1][hit[0]], None
        column = self.columns.block(slice(None), Z_j)[:, 0]
        if own_j >= 0:
            column[own_j] = k_diag_j
        k_at = None if kernel_at is None else column[kernel_at]
        if M_j.shape[0]:
            column -= M_j @ self.M[: M_j.shape[0]]
        return column, k_at

    def append_row(self, p, column, scale, beta_p, own_j):
        """The new row ``mu = scale A_.j`` of ``M`` and the update of eq. (3).

        ``diag(A) -= mu^2``, ``f_hat += beta_p mu``; variances clipped at 0. Returns the
        smallest variance before the clip (round-off below 0 is warned about by the caller).
        """
        mu = self.M[p]
        np.multiply(column, scale, out=mu)
        np.multiply(mu, mu, out=self._scratch)
        self.diag_A -= self._scratch
        np.multiply(mu, beta_p, out=self._scratch)
        self.f_hat += self._scratch
        low = float(np.min(self.diag_A, initial=np.inf))
        if low < 0.0:
            np.maximum(self.diag_A, 0.0, out=self.diag_A)
        if own_j >= 0:
            self.in_basis[own_j] = True
        self.kept = None  # stale once M has changed
        return low

    def remove_row(self, rotations, p, beta_last, own_k):
        """Rotate ``M`` as ``L`` was (Givens, :func:`~skgpsparse.linalg.cholesky_delete`);
        the rotated last row ``r`` leaves: ``diag(A) += r^2``, ``f_hat -= r beta_last``."""
        rotations.apply(self.M, overwrite=True)
        r = self.M[p - 1]
        # A' = K - M'^T M' = A + r r^T, f' = M'^T beta' = f - r beta_p
        self.diag_A += r * r
        self.f_hat -= beta_last * r
        r[:] = 0.0
        if own_k >= 0:
            self.in_basis[own_k] = False
        self.kept = None
