"""Incremental state of sparse MAP GP regression: append, delete and the factors they keep.

The model is the sparse MAP estimate of the exchange paper (Sun & Yao 2006, eq. (2)),

    pi(alpha_p) = 1/2 |y - K_p alpha_p|^2 + s2/2 alpha_p^T Q_p alpha_p,

over a basis set ``I_p`` of training points, with ``K_p = K(X, X_u)`` (``n x p``) and
``Q_p = K(X_u, X_u) + jitter I``. The minimiser and the factors are kept in the numerically
stable form of Seeger, Williams & Lawrence (2003) and of the exchange paper:

- ``L L^T = Q_p`` and ``V = L^-1 K_p^T`` (``p x n``, the paper's ``G_p^T``), so ``K_p = V^T L^T``;
- ``R R^T = V V^T + s2 I`` (the paper's ``M_p``), hence
  ``Sigma_p^-1 = K_p^T K_p + s2 Q_p = (L R)(L R)^T``;
- ``beta = R^-1 V y``, ``w = R^-T beta``, ``alpha_p = L^-T w`` (``alpha_p = Sigma_p K_p^T y``);
- residual ``mu = y - K_p alpha_p = y - V^T w`` and cost ``pi = 1/2 |mu|^2 + s2/2 |w|^2``
  (``alpha_p^T Q_p alpha_p = |L^T alpha_p|^2 = |w|^2``);
- ``D = diag(Sigma_p)`` (eq. (5) needs it) and ``q = diag(K - V^T V)``, the diagonal of the
  Nystrom approximation error at every training point (the info-gain criterion needs it).

The ``p x n`` array kept is ``K_p^T`` itself, not ``V``, stored by blocks of 2048 rows
(``skgpsparse.kernels._columns.ColumnBlocks``: each block's ``p x 2048`` part is contiguous, which
BLAS streams at twice the bandwidth of row-strided slices): a new basis vector's kernel column is
stored as it is, and ``V`` is only ever used through products that one pass over ``K_p^T`` gives
(``V^T l = K_p L^-T l``, ``V v = L^-1 K_p^T v``). Appending a basis vector borders ``L`` and ``R``
with one fused pass over ``K_p^T`` (chunk by chunk: the new basis vector's kernel column, stored as
it is formed, the new row ``v`` of ``V``, and ``K_p^T v`` while the chunk is in cache); a working
set is scored with one more pass (``skgpsparse.regression._scoring``, whose criteria the state
inherits), in which the residual ``mu = y - K_p alpha`` and the candidates' kernel columns are
formed chunk by chunk and never stored whole. That is two reads of ``K_p^T`` per forward step
instead of three of ``V`` (benchmarks/scale/results/million.md). Deleting one re-triangularises
``L`` with Givens rotations (:func:`~skgpsparse.linalg.cholesky_delete`) and follows with ``R``
(:func:`~skgpsparse.linalg.cholesky_rotate`); the row of ``V`` that leaves is formed with one pass
(exchange paper, steps 1-6). All factors live in preallocated ``p_max``-sized storage, so nothing
is reallocated while the basis grows and shrinks.

Kernel columns of an exact ``RBF`` or ``ConstantKernel * RBF`` (either order) are computed
from inner products of the scaled, centred inputs (one BLAS product and one ``exp`` per
block, in ``skgpsparse.kernels._columns``), ``k(x, z) = c exp(x.z - |x|^2/2 - |z|^2/2)``; other
kernels are called as they are. For a ``float32`` input, the columns of a fresh working set
that only score candidates for ``"matching_pursuit"`` are computed in ``float32`` (the
product and the ``exp``; the ``float64`` ``exp`` is not vectorised on AVX2 CPUs), while
everything the model keeps (``K_p^T``, the factors, ``alpha``, the residual, and the new basis
vector's column) is ``float64``, computed from the same inputs as for ``X.astype(float64)``.

The jitter keeps ``Q_p`` positive definite when basis vectors (nearly) coincide; it is part of
the model (``Q_p`` includes it everywhere, as in the marginal likelihood), by default
``1e-8`` times the mean prior variance ``mean(k(x_i, x_i))``.
"""

import numpy as np
from scipy.linalg import solve_triangular

from ..kernels._columns import ColumnBlocks, KernelColumns, blas_threads, kernel_diag, run_chunks
from ..linalg import cholesky_append, cholesky_delete, cholesky_rotate
from ._scoring import _CandidateScoring

__all__ = ["RELATIVE_JITTER", "RegressionState", "append_pass"]

# Jitter added to diag(Q_p), relative to the mean prior variance; the likelihood uses it too.
RELATIVE_JITTER = 1e-8

# Rows of X per block of the K_p^T storage (p_max x 2048 entries per block).
_BLOCK_ROWS = 2048
# Entries of K_p^T per chunk of the append pass (8 MB: the chunk is read twice, the second
# time from cache). Chunks never cross a block of the storage, so up to p = 512 a chunk is a
# whole block, one contiguous p x 2048 stretch: OpenBLAS's two products on it took 25 % less
# time than on the two strided p x 1024 halves that a 4 MB budget gave at p = 500 (n = 200,000,
# float32 X, two threads: append passes 11.3 s against 15.2 s, medians of 2).
_APPEND_CHUNK_ENTRIES = 1 << 20


def _solve_lower(L, b, trans=0):
    return solve_triangular(L, b, lower=True, trans=trans, check_finite=False)


def _sqnorm(a):
    """``|a|^2`` of a vector, or the squared Frobenius norm of an array of several targets."""
    return float(a @ a) if a.ndim == 1 else float(np.einsum("ij,ij->", a, a))


class RegressionState(_CandidateScoring):
    """Sparse MAP GP regression over a growing and shrinking basis set.

    Implements the selection protocol of :mod:`skgpsparse.selection` (``candidates``,
    ``score``, ``sampling_weights``) and the exchange paper's deletion criterion.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        Covariance function (its hyperparameters are used as they are).
    X : ndarray of shape (n_samples, n_features)
        Training inputs.
    y : ndarray of shape (n_samples,) or (n_samples, n_targets)
        Training targets. Several targets share the basis, the kernel and the noise; cost
        (2) and the selection criteria are summed over them.
    noise_variance : float
        Noise variance ``s2 > 0``.
    max_basis : int
        Capacity ``p_max`` of the preallocated storage.
    jitter : float, default=None
        Added to ``diag(Q_p)``; ``None`` means ``RELATIVE_JITTER * mean(k(x_i, x_i))``.
    n_threads : int or None, default=1
        Threads of the passes over the rows; ``None`` means as many as BLAS uses when the
        state is created (one inside a joblib worker). The results do not depend on it. One
        by default: on the shared two-core test machine two threads made a fit slower
        (54 s against 45 s wall, n = 200,000, p = 200), as a second BLAS thread did.
    score_dtype : {None, numpy.float32, numpy.float64}, default=None
        Precision of the kernel columns that only score a fresh working set for
        ``"matching_pursuit"``; ``None`` means ``float32`` for a ``float32`` ``X`` and
        ``float64`` otherwise. The model itself is always ``float64``.

    Attributes
    ----------
    n_basis : int
        Current basis size ``p``.
    basis : ndarray of shape (p,)
        Training-set indices of the basis vectors, in factor order.
    alpha : ndarray of shape (p,) or (p, n_targets)
        Weights ``alpha_p`` minimising cost (2).
    residual : ndarray of shape (n_samples,) or (n_samples, n_targets)
        ``mu = y - K_p alpha_p``.
    cost : float
        Minimum of cost (2).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse.regression._state import RegressionState
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (40, 1)); y = np.sin(X[:, 0])
    >>> state = RegressionState(RBF(1.0), X, y, noise_variance=0.01, max_basis=5)
    >>> for j in (0, 10, 20):
    ...     _ = state.append(j)
    >>> state.basis.tolist(), bool(state.cost < 0.5 * y @ y)
    ([0, 10, 20], True)
    """

    def __init__(
        self,
        kernel,
        X,
        y,
        noise_variance,
        max_basis,
        *,
        jitter=None,
        n_threads=1,
        score_dtype=None,
    ):
        self.kernel = kernel
        self.n_threads = blas_threads() if n_threads is None else max(1, int(n_threads))
        self.X = X
        self.y = np.asarray(y, dtype=float)
        self.noise_variance = float(noise_variance)
        n = X.shape[0]
        self.n = n
        self.p_max = int(max_basis)
        self.kdiag = kernel_diag(kernel, X)
        if jitter is None:
            jitter = RELATIVE_JITTER * max(float(np.mean(self.kdiag)), 0.0)
        self.jitter = float(jitter)
        if score_dtype is None:
            score_dtype = np.float32 if X.dtype == np.float32 else np.float64
        if np.dtype(score_dtype) not in (np.float32, np.float64):
            raise ValueError(f"`score_dtype` must be float32 or float64, got {score_dtype!r}.")
        self.score_dtype = score_dtype = np.dtype(score_dtype).type
        self._columns = KernelColumns(kernel, X, score_dtype=score_dtype)
        pm = self.p_max
        self._L = np.zeros((pm, pm))
        self._R = np.zeros((pm, pm))
        # Column i: the kernel column K(X, x_i) of basis vector i (factor order), K_p^T.
        self._K = ColumnBlocks(n, pm, _BLOCK_ROWS)
        # V y and beta = R^-1 V y: one column per target (a vector for one 1-D target).
        self._Vy = np.zeros((pm,) + self.y.shape[1:])
        self._beta = np.zeros((pm,) + self.y.shape[1:])
        self._D = np.zeros(pm)
        self._idx = np.zeros(pm, dtype=np.intp)
        self.p = 0
        self.in_basis = np.zeros(n, dtype=bool)
        # Points never to be offered again (numerically redundant) / excluded for one step.
        self.redundant = np.zeros(n, dtype=bool)
        self.excluded = np.zeros(n, dtype=bool)
        self.q = np.clip(self.kdiag, 0.0, None)
        self.yy = _sqnorm(self.y)
        self._cache_K = self._cache_sq = self._cache_idx = None
        self._last_J = np.zeros(0, dtype=np.intp)
        self._refresh()

    # ------------------------------------------------------------------ views
    @property
    def n_basis(self):
        return self.p

    @property
    def basis(self):
        return self._idx[: self.p].copy()

    @property
    def L(self):
        """Lower factor of ``Q_p`` (a view)."""
        return self._L[: self.p, : self.p]

    @property
    def R(self):
        """Lower factor of ``V V^T + s2 I`` (a view)."""
        return self._R[: self.p, : self.p]

    @property
    def K_pT(self):
        """``K_p^T = K(X_u, X)`` (a new ``p x n`` array, assembled from the blocks)."""
        return self._K.dense(self.p)

    @property
    def V(self):
        """``L^-1 K_p^T`` (a new ``p x n`` array: one triangular solve)."""
        return _solve_lower(self.L, self.K_pT) if self.p else np.zeros((0, self.n))

    @property
    def Vy(self):
        """``V y = L^-1 K_p^T y`` (a view)."""
        return self._Vy[: self.p]

    @property
    def sigma_diag(self):
        """``D_p = diag(Sigma_p)``, ``Sigma_p = (K_p^T K_p + s2 Q_p)^-1``."""
        return self._D[: self.p].copy()

    def _refresh(self):
        """Recompute ``w`` and ``alpha`` from ``beta`` (O(p^2)); the residual is lazy."""
        p = self.p
        if p == 0:
            self.w = np.zeros((0,) + self.y.shape[1:])
            self.alpha = np.zeros((0,) + self.y.shape[1:])
        else:
            self.w = _solve_lower(self.R, self._beta[:p], trans=1)
            self.alpha = _solve_lower(self.L, self.w, trans=1)
        # The residual costs a pass over K_p (O(n p)); the scoring pass forms it on the way,
        # the other users compute it on demand.
        self._residual = None

    @property
    def residual(self):
        """``mu = y - K_p alpha_p`` (computed on first access after a change)."""
        if self._residual is None:
            self._residual = self.y - self._K.times(self.alpha) if self.p else self.y.copy()
        return self._residual

    @property
    def cost(self):
        """Minimum of cost (2), ``1/2 |mu|^2 + s2/2 |w|^2``, from the factors in O(p).

        ``|mu|^2 = |y|^2 - 2 w^T V y + w^T V V^T w`` with ``V y = R beta`` and ``V V^T = R R^T -
        s2 I`` gives ``pi = (|y|^2 - |beta|^2) / 2``. When that difference cancels (the fit
        is nearly exact) the residual is computed instead.
        """
        b2 = _sqnorm(self._beta[: self.p])
        fast = 0.5 * (self.yy - b2)
        if self._residual is None and fast > 1e-6 * self.yy:
            return fast
        mu = self.residual
        return 0.5 * _sqnorm(mu) + 0.5 * self.noise_variance * _sqnorm(self.w)

    def log_marginal_likelihood(self):
        """GPML eq. (8.17) on the current basis, O(p) from the factors.

        With ``C = V^T V + s2 I``: ``y^T C^-1 y = (|y|^2 - |beta|^2) / s2 = 2 pi / s2`` and
        ``log|C| = (n - p) log s2 + 2 sum(log diag R)`` (matrix inversion and determinant
        lemmas), so the evidence is ``-pi / s2 - log|C| / 2 - n/2 log(2 pi)``; with ``m``
        targets (summed over them, as scikit-learn's GaussianProcessRegressor does) ``pi`` is
        their summed cost and the other two terms count ``m`` times.
        """
        s2 = self.noise_variance
        m = 1 if self.y.ndim == 1 else self.y.shape[1]
        log_det = (self.n - self.p) * np.log(s2) + 2.0 * float(np.sum(np.log(np.diag(self.R))))
        return -self.cost / s2 - 0.5 * m * log_det - 0.5 * m * self.n * np.log(2.0 * np.pi)

    # ------------------------------------------------------------------ kernel blocks
    def kernel_columns(self, J):
        """``K(X, X_J)`` (``n x len(J)``)."""
        return self._columns(slice(None), np.asarray(J))

    def _chunks(self, entries_per_row, budget):
        """Row ranges ``(a, b)`` of chunks with about ``budget`` entries, inside the blocks."""
        return self._K.chunks(
            int(np.clip(budget // max(entries_per_row, 1), 256, max(self.n, 256)))
        )

    # ------------------------------------------------------------------ protocol
    def candidates(self):
        """Training-set indices that may join the basis."""
        return np.flatnonzero(~(self.in_basis | self.redundant | self.excluded))

    def sampling_weights(self, J):
        """Weights for adaptive sampling: the Nystrom error ``q_j`` of each candidate."""
        return self.q[np.asarray(J)]

    def deletion_scores(self):
        """Increase of the cost if each basis vector left: exchange paper eq. (4)-(5).

        ``1/2 alpha_p(j)^2 / Sigma_p(j, j)``, in factor order (position ``j`` of ``basis``).
        """
        D = self._D[: self.p]
        a2 = self.alpha**2 if self.alpha.ndim == 1 else np.sum(self.alpha**2, axis=1)
        return 0.5 * a2 / np.maximum(D, np.finfo(float).tiny)

    # ------------------------------------------------------------------ updates
    def append(self, j):
        """Add training point ``j`` to the basis: O(n p). Returns False if it is redundant.

        A point is redundant, marked and never offered again, when its conditional prior
        variance ``k_jj + jitter - |L^-1 k_uj|^2`` is below half the jitter (exactly, >= jitter)
        or what it adds to ``V V^T``, ``|v|^2 - |R^-1 V v|^2``, is round-off (repeated rows).
        """
        j = int(j)
        p = self.p
        if p >= self.p_max:
            raise ValueError(f"The basis is full (max_basis={self.p_max}).")
        if self.in_basis[j]:
            raise ValueError(f"Point {j} is already in the basis.")
        s2 = self.noise_variance
        # What forms the new column (float64, whatever the scoring precision) on the rows;
        # the append pass computes and stores it chunk by chunk.
        z_j = self._new_column(j)
        b = self._basis_values(z_j, p)
        c = self._kdiag_at(j) + self.jitter
        l = _solve_lower(self.L, b) if p else b
        d2 = c - float(l @ l)
        if not np.isfinite(d2) or d2 < 0.5 * self.jitter:
            self.redundant[j] = True
            return False
        # Seeger et al. 2003 eq. (6): border L with l = L^-1 k_uj, l_pp = sqrt(c - |l|^2).
        cholesky_append(self._L, b, c, size=p, overwrite_L=True)
        lpp = self._L[p, p]
        # New row of V = L^-1 K_p^T: v = (k_j - V^T l) / l_pp with V^T l = K_p L^-T l; the
        # border of R R^T = V V^T + s2 I needs V v = L^-1 (K_p^T v) and |v|^2 + s2.
        q = self.q.copy() if hasattr(self, "q") else None  # restored if j is redundant; O(n)
        Vv, vv, vy = self._append_pass(z_j, _solve_lower(self.L, l, trans=1) if p else l, lpp)
        rv = _solve_lower(self.R, Vv) if p else Vv
        if not vv - float(rv @ rv) > 1e-10 * vv:  # R's pivot is round-off
            self.redundant[j] = True  # and q as before (a partitioned state's: in its rows)
            if q is not None:
                self.q[:] = q
            return False
        cholesky_append(self._R, Vv, vv + s2, size=p, overwrite_L=True)
        r = self._R[p, :p]
        rpp = self._R[p, p]
        self._Vy[p] = vy
        # beta = R^-1 V y gains one entry; the old ones are unchanged.
        self._beta[p] = (self._Vy[p] - r @ self._beta[:p]) / rpp
        # D = diag((L R)^-T (L R)^-1): bordering (L R) adds the squares of its new inverse row
        # t = -(L^-T (l + l_pp R^-T r)) / (l_pp r_pp) to the old entries.
        if p:
            t = _solve_lower(self.L, l + lpp * _solve_lower(self.R, r, trans=1), trans=1)
            t /= lpp * rpp
            self._D[:p] += t * t
        self._D[p] = 1.0 / (lpp * rpp) ** 2
        self._idx[p] = j
        self.in_basis[j] = True
        self.p = p + 1
        self._refresh()
        return True

    # ------------------------------------------------------------------ row hooks
    # What append and delete do on the rows, apart from the p x p factors: a state whose
    # rows live elsewhere (skgpsparse.regression._partitioned) overrides these.
    def _new_column(self, j):
        """What the new basis vector's kernel column ``K(X, x_j)`` is formed from (float64).

        The operand of :meth:`KernelColumns.block` for ``x_j``: the append pass computes the
        column chunk by chunk on its threads and stores it as it goes.
        """
        return self._columns.operand(np.array([j]))

    def _basis_values(self, z_j, p):
        """``K(X_u, x_j)`` for the first ``p`` basis vectors."""
        return self._columns.block(self._idx[:p], z_j)[:, 0] if p else np.zeros(0)

    def _kdiag_at(self, J):
        """``k(x_j, x_j)`` of training points ``J`` (an index or an index array)."""
        return self.kdiag[J]

    def _delete_rows(self, coef, pos, p, j):
        """The rows' side of deleting basis position ``pos`` (training point ``j``).

        ``q += r^2`` for the row ``r = K_p coef`` of ``V`` that leaves, and column ``pos``
        leaves ``K_p^T``.
        """
        r = self._K.times(coef)
        self.q += r * r
        self._K.delete_column(pos, p)
        self.q[j] = max(self.q[j], 0.0)

    def nystrom_trace(self):
        """``tr(K - V^T V) = sum(q)``, the prior variance the basis leaves unexplained."""
        return float(np.sum(self.q))

    def mean_squared_residual(self):
        """``mean(mu^2)`` over the rows (and targets)."""
        return float(np.mean(self.residual**2))

    def _append_pass(self, z, t, lpp):
        """One pass over ``K_p^T`` for the new row ``v = (k - K_p t) / l_pp`` of ``V``.

        ``k = K(X, x_j)`` is formed from the operand ``z`` chunk by chunk and stored as
        column ``p``; see :func:`append_pass`. Returns ``(V v, |v|^2, v^T y)`` with ``V v =
        L^-1 K_p^T v`` (``L`` before the append); ``v^T y`` has one entry per target.
        """
        p = self.p
        chunks = self._chunks(p, _APPEND_CHUNK_ENTRIES)
        column = _column_of(self._columns, z)
        acc, total = append_pass(
            self._K, chunks, self.y, self.q, column, t, lpp, p, self.n_threads
        )
        vv, vy = total[0], (total[1] if self.y.ndim == 1 else total[1:])
        return (_solve_lower(self.L, acc) if p else np.zeros(0)), vv, vy

    def delete(self, pos):
        """Remove the basis vector at position ``pos`` (factor order): O(n p + p^2).

        Exchange paper steps 2-5: Givens rotations re-triangularise ``L`` and rotate the
        coordinates of ``V`` (``G_p``) and ``R`` (``M_p``); the rotated last row ``r`` of ``V``
        leaves, so ``q += r^2`` (``r = u^T V = (L^-T u)^T K_p^T`` with ``u`` the last row of
        the rotations ``Q^T``: one pass). ``Sigma_(p-1)`` is the inverse of ``Sigma_p^-1``
        without row and column ``pos``: ``D_new = D - Sigma[:, pos]^2 / Sigma[pos, pos]``.
        """
        p = self.p
        pos = int(pos)
        if not 0 <= pos < p:
            raise ValueError(f"`pos` must be in [0, {p - 1}], got {pos}.")
        # Column pos of Sigma = (L R)^-T (L R)^-1 e_pos.
        e = np.zeros(p)
        e[pos] = 1.0
        s = _solve_lower(self.R, _solve_lower(self.L, e))
        s = _solve_lower(self.L, _solve_lower(self.R, s, trans=1), trans=1)
        D = self._D[:p] - s * s / max(s[pos], np.finfo(float).tiny)
        j = int(self._idx[pos])
        L_old = self.L.copy()
        _, rot = cholesky_delete(self._L, pos, size=p, overwrite_L=True)
        u = rot.apply(np.eye(p), overwrite=True)[p - 1]
        self._delete_rows(_solve_lower(L_old, u, trans=1), pos, p, j)
        cholesky_rotate(self._R, rot, size=p, overwrite_L=True)
        self._R[p - 1, :p] = 0.0
        rot.apply(self._Vy, overwrite=True)
        self._Vy[p - 1] = 0.0
        self._idx[pos : p - 1] = self._idx[pos + 1 : p]
        self._D[: p - 1] = np.delete(D, pos)
        self._D[p - 1] = 0.0
        self.in_basis[j] = False
        self.p = p - 1
        # beta = R^-1 V y on the new factors.
        if self.p:
            self._beta[: self.p] = _solve_lower(self.R, self._Vy[: self.p])
        self._beta[self.p] = 0.0
        self._refresh()
        return j


def _column_of(columns, z):
    """``column(a, b)``: rows ``a .. b-1`` of the kernel column of operand ``z`` (float64)."""
    return lambda a, b: columns.block(slice(a, b), z)[:, 0]


def append_pass(K, chunks, y, q, column, t, lpp, p, n_threads):
    """The rows' part of an append: one pass over the first ``p`` columns of ``K`` (``K_p^T``).

    Chunk by chunk (the chunk of ``K_p^T`` read twice while in cache): the new basis vector's
    kernel column ``k`` (``column(a, b)`` gives rows ``a .. b-1``), stored as column ``p`` of
    ``K``; the new row ``v = (k - K_p t) / l_pp`` of ``V``, then ``K_p^T v``, ``|v|^2``,
    ``v^T y`` and ``q -= v^2`` (``q = diag(K - V^T V)``, updated in place). Forming and
    storing the column here puts its kernel evaluations and the first writes to its storage
    on the pass's threads. Returns ``(K_p^T v, [|v|^2, v^T y...])``, summed over the chunks;
    a row partition of a larger set returns its part of both sums.
    """
    acc = np.zeros((len(chunks), p))
    # per chunk: |v|^2, then v^T y (one column per target)
    sums = np.zeros((len(chunks), 1 + (y.shape[1] if y.ndim == 2 else 1)))

    def work(i):
        a, b = chunks[i]
        k_c = column(a, b)
        K.chunk(a, b, p + 1)[p] = k_c
        K_c = K.chunk(a, b, p)
        v = k_c - t @ K_c if p else k_c  # k_c is stored: v may reuse its memory
        v /= lpp
        if p:
            np.dot(K_c, v, out=acc[i])
        sums[i, 0] = v @ v
        sums[i, 1:] = v @ y[a:b]
        q_c = q[a:b]
        q_c -= v * v
        np.maximum(q_c, 0.0, out=q_c)

    run_chunks(len(chunks), work, n_threads)
    return acc.sum(axis=0), sums.sum(axis=0)
