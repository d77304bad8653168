"""The regression state with its rows in partitions (a row store), e.g. on cluster workers.

:class:`PartitionedRegressionState` is :class:`~._state.RegressionState` with the per-row
arrays (``K_p^T`` by blocks, the Nystrom errors ``q``, the targets) kept beside each
partition of a :class:`~skgpsparse.rows._store.RowStore` instead of on the driver. The driver keeps
what is ``O(p^2)`` (the factors ``L``, ``R``, ``beta``, ``D``), the basis rows ``X_u``
(``p x d``) and three boolean masks over the rows (which points are in the basis, redundant
or excluded for a step: the candidates a selector draws from). Per forward step:

1. the selector draws a working set ``J`` on the driver (the same draws as in memory);
2. the rows ``X_J`` are fetched from the partitions that hold them (``kappa x d`` values);
3. every partition gets ``X_J`` and the weights ``alpha`` and returns its part of
   ``K_J^T mu``, ``|k_j|^2`` (and ``K_p^T K_J`` for ``"exact"``): the same streaming pass as
   in memory (:func:`~._scoring.streaming_sums`) over its rows; the driver adds the parts
   and scores the candidates;
4. for the chosen point ``x_j`` every partition forms its part of the new kernel column,
   runs the append pass (:func:`~._state.append_pass`) and keeps the column; it returns its
   part of ``K_p^T v``, ``|v|^2`` and ``v^T y`` (``p + 2`` numbers per target), and the
   driver borders the factors.

Steps 2 and 4 share a round trip (:meth:`PartitionedRegressionState.speculate`): before
the append the driver draws the next step's working set with a copy of the random state (the
masks as they will be after the append), and each partition returns its rows of it with its
append sums. The next step's own draw, from the real random state, is the same set, so its
rows are already on the driver: two round trips per forward step instead of three, and the
draws, hence the basis, are the in-memory fit's (a draw that differs, e.g. after an exchange
step's deletion, is fetched as before).

A deletion sends the coefficients of the leaving row of ``V`` (``p`` numbers). The columns of
the RBF kernel use the whole training set's centre on every partition, so each partition's
columns are the in-memory fit's; the sums over partitions are added in another order, so the
scores and factors agree with the in-memory fit to rounding, not bit for bit.
"""

from types import SimpleNamespace

import numpy as np

from ..kernels._columns import ColumnBlocks, KernelColumns, kernel_diag
from ..rows._store import read_only, state_scope
from ..selection import draw_ahead
from ._scoring import _SCORE_CHUNK_ENTRIES, _STREAM_MAX, CRITERIA, info_gain, streaming_sums
from ._state import (
    _APPEND_CHUNK_ENTRIES,
    _BLOCK_ROWS,
    RegressionState,
    _column_of,
    _solve_lower,
    _sqnorm,
    append_pass,
)

__all__ = ["PartitionedRegressionState", "row_jitter_base"]

_KEY = "regression_state"


# ---------------------------------------------------------------- on each partition
def _chunks(K, n, entries_per_row, budget):
    return K.chunks(int(np.clip(budget // max(entries_per_row, 1), 256, max(n, 256))))


@state_scope(_KEY, resets=True)
def _p_init(part, kernel, centre, p_max, score_dtype):
    y = np.asarray(part.y, dtype=np.float64)
    kdiag = kernel_diag(kernel, part.X)
    part.state[_KEY] = SimpleNamespace(
        cols=KernelColumns(kernel, part.X, score_dtype=score_dtype, centre=centre),
        K=ColumnBlocks(part.n, p_max, _BLOCK_ROWS),
        y=y,
        q=np.clip(kdiag, 0.0, None),
        q_saved=np.empty(part.n),
    )
    return _sqnorm(y)


@state_scope(_KEY)
def _p_append(part, x_j, t, lpp, p, n_threads):
    st = part.state[_KEY]
    column = _column_of(st.cols, st.cols.operand_of_rows(x_j[None, :]))
    chunks = _chunks(st.K, part.n, p, _APPEND_CHUNK_ENTRIES)
    np.copyto(st.q_saved, st.q)  # restored if the point is redundant (_p_restore_q)
    return append_pass(st.K, chunks, st.y, st.q, column, t, lpp, p, n_threads)


@state_scope(_KEY)
def _p_restore_q(part):
    st = part.state[_KEY]
    np.copyto(st.q, st.q_saved)


@state_scope(_KEY)
def _p_delete(part, coef, pos, p, j_local):
    st = part.state[_KEY]
    r = st.K.times(coef)
    st.q += r * r
    st.K.delete_column(pos, p)
    if j_local >= 0:
        st.q[j_local] = max(st.q[j_local], 0.0)


@state_scope(_KEY)
def _p_score(part, X_J, dtype, alpha, p, exact, n_threads):
    st = part.state[_KEY]
    Z = st.cols.operand_of_rows(X_J, dtype)
    chunks = _chunks(st.K, part.n, len(X_J), _SCORE_CHUNK_ENTRIES)
    Kmu, sq, KpK, _ = streaming_sums(st.cols, st.K, chunks, st.y, alpha, p, Z, exact, n_threads)
    return Kmu, sq, KpK


def _residual(st, alpha, p):
    return st.y - st.K.times(alpha) if p else st.y


@read_only
def _p_residual_sq(part, alpha, p):
    return _sqnorm(_residual(part.state[_KEY], alpha, p))


@read_only
def _p_q_and_residual(part, local, alpha, p):
    st = part.state[_KEY]
    return st.q[local], _residual(st, alpha, p)[local]


@read_only
def _p_q(part, local):
    return part.state[_KEY].q[local]


@read_only
def _p_q_sum(part):
    return float(np.sum(part.state[_KEY].q))


@read_only
def _p_kdiag_sum(part, kernel):
    return float(np.sum(kernel_diag(kernel, part.X)))


def row_jitter_base(kernel, rows):
    """``mean(k(x_i, x_i))`` over the partitions' rows."""
    return rows.sum(_p_kdiag_sum, kernel) / rows.n


# ---------------------------------------------------------------- on the driver
class PartitionedRegressionState(RegressionState):
    """:class:`~._state.RegressionState` whose rows live in the partitions of ``rows``.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    rows : skgpsparse.rows._store.RowStore
        The training rows and (normalised) targets, in partitions.
    noise_variance : float
    max_basis : int
    centre : ndarray of shape (n_features,)
        The mean training row (:func:`row_centre`), shared by every partition's columns.
    jitter : float
    n_threads : int, default=1
        Threads of each partition's passes.
    score_dtype : {None, numpy.float32, numpy.float64}, default=None
        As :class:`~._state.RegressionState`'s.

    Of the in-memory state's attributes, ``residual``, ``K_pT`` and ``V`` (``n``-sized) are
    not available on the driver; ``y`` is an empty array with the targets' trailing shape.
    """

    def __init__(
        self, kernel, rows, noise_variance, max_basis, *, centre, jitter, n_threads=1,
        score_dtype=None,
    ):
        self.kernel, self.rows = kernel, rows
        self.n_threads = max(1, int(n_threads))
        self.noise_variance = float(noise_variance)
        self.n = n = rows.n
        self.p_max = pm = int(max_basis)
        self.jitter = float(jitter)
        if score_dtype is None:
            score_dtype = np.float32 if rows.dtype == np.float32 else np.float64
        self.score_dtype = np.dtype(score_dtype).type
        self.centre = np.asarray(centre, dtype=np.float64)
        self.y = np.zeros((0,) + tuple(rows.target_shape))
        self._L, self._R = np.zeros((pm, pm)), np.zeros((pm, pm))
        self._Vy = np.zeros((pm,) + self.y.shape[1:])
        self._beta = np.zeros((pm,) + self.y.shape[1:])
        self._D = np.zeros(pm)
        self._idx = np.zeros(pm, dtype=np.intp)
        self._Xu = np.zeros((pm, rows.n_features), dtype=rows.dtype)
        self.p = 0
        self.in_basis = np.zeros(n, dtype=bool)
        self.redundant = np.zeros(n, dtype=bool)
        self.excluded = np.zeros(n, dtype=bool)
        self._fetched = None  # (J, X_J) of the last rows fetched
        self.yy = rows.sum(_p_init, kernel, self.centre, pm, self.score_dtype)
        self._refresh()

    # ------------------------------------------------------------------ rows on the driver
    def speculate(self, selector, rng):
        """Fetch each next forward step's working set with this step's append pass.

        ``selector`` and ``rng`` are the ones the forward steps use; the next working set is
        predicted by :func:`~skgpsparse.selection.draw_ahead` (a copy of ``rng``'s state:
        ``rng`` draws exactly what it would without it).
        """
        self._speculation = (selector, rng)

    def prefetch(self, J):
        """Fetch the rows ``J`` in one round trip for the appends that follow (a known basis)."""
        J = np.asarray(J, dtype=np.intp).reshape(-1)
        self._fetched = (J, self.rows.take(J)[0])

    def append(self, j):
        self._appending, self._passed = int(j), False
        try:
            added = super().append(j)
        finally:
            self._appending = None
        if not added and self._passed:  # R's pivot was round-off: q as before the pass
            self.rows.map(_p_restore_q)
        return added

    def _next_working_set(self):
        """The working set the next forward step will draw, or None if it cannot be told."""
        selector, rng = getattr(self, "_speculation", None) or (None, None)
        j = getattr(self, "_appending", None)
        if selector is None or j is None or self.p + 1 >= self.p_max:
            return None  # no speculation, or the basis is full after this append
        self.in_basis[j] = True  # as after this append
        try:  # (info_gain is scored from gathered q and mu, without rows)
            J = draw_ahead(selector, self, rng, ("exact", "matching_pursuit", "vfe"))
        finally:
            self.in_basis[j] = False
        return J if J is not None and 0 < len(J) <= _STREAM_MAX else None

    def _rows_of(self, J):
        """``X[J]``, from the last fetch when it holds all of ``J``, else fetched."""
        J = np.atleast_1d(np.asarray(J, dtype=np.intp))
        if self._fetched is not None:
            FJ, FX = self._fetched
            order = np.argsort(FJ, kind="stable")
            at = np.searchsorted(FJ[order], J).clip(0, len(FJ) - 1)
            if np.all(FJ[order][at] == J):
                return FX[order[at]]
        X_J = self.rows.take(J)[0]
        self._fetched = (J, X_J)
        return X_J

    def _cross(self, Xa, Xb):
        """``K(Xa, Xb)`` with the training set's centre (as the partitions' columns)."""
        cols = KernelColumns(self.kernel, Xa, centre=self.centre)
        return cols.block(slice(None), cols.operand_of_rows(Xb))

    @property
    def basis_rows(self):
        """``X_u``, the basis rows in factor order (a copy)."""
        return self._Xu[: self.p].copy()

    # ------------------------------------------------------------------ row hooks
    def _new_column(self, j):
        return self._rows_of(j)[0]  # the row x_j: the partitions form its column

    def _basis_values(self, x_j, p):
        return self._cross(self._Xu[:p], x_j[None, :])[:, 0]

    def _kdiag_at(self, J):
        d = kernel_diag(self.kernel, self._rows_of(J))
        return d if np.ndim(J) else d[0]

    def _append_pass(self, x_j, t, lpp):
        p, self._passed = self.p, True
        J_next = self._next_working_set()
        if J_next is None:
            acc, total = self.rows.sum(_p_append, x_j, t, lpp, p, self.n_threads)
        else:  # the next step's rows come back with the append sums (one round trip)
            (acc, total), X_next = self.rows.sum_and_fetch(
                _p_append, J_next, x_j, t, lpp, p, self.n_threads
            )
            self._fetched = (J_next, X_next)
        self._Xu[p] = x_j  # the partitions stored x_j's column in the pass
        vv, vy = total[0], (total[1] if self.y.ndim == 1 else total[1:])
        return (_solve_lower(self.L, acc) if p else np.zeros(0)), vv, vy

    def _delete_rows(self, coef, pos, p, j):
        owner = self.rows.split([j])
        self.rows.map_each(
            _p_delete,
            {
                i: (coef, pos, p, int(owner[i][1][0]) if i in owner else -1)
                for i in range(self.rows.n_partitions)
            },
        )
        self._Xu[pos : p - 1] = self._Xu[pos + 1 : p]

    # ------------------------------------------------------------------ row sums
    @property
    def residual(self):
        raise AttributeError(
            "The residual of a partitioned state stays in its partitions; use "
            "mean_squared_residual() or the cost."
        )

    @property
    def cost(self):
        """Minimum of cost (2): from the factors, or from the partitions' residuals."""
        fast = 0.5 * (self.yy - _sqnorm(self._beta[: self.p]))
        if fast > 1e-6 * self.yy:
            return fast
        mu2 = self.rows.sum(_p_residual_sq, self.alpha, self.p)
        return 0.5 * mu2 + 0.5 * self.noise_variance * _sqnorm(self.w)

    def mean_squared_residual(self):
        m = 1 if self.y.ndim == 1 else self.y.shape[1]
        return self.rows.sum(_p_residual_sq, self.alpha, self.p) / (self.n * m)

    def nystrom_trace(self):
        return self.rows.sum(_p_q_sum)

    def sampling_weights(self, J):
        return self.rows.gather(_p_q, J)

    def decrease(self, criterion, J):
        """:meth:`~._scoring._CandidateScoring.decrease` from the partitions' partial sums."""
        J = np.asarray(J, dtype=np.intp).reshape(-1)
        if criterion == "info_gain":
            qj, mu = self.rows.gather(_p_q_and_residual, J, self.alpha, self.p)
            return info_gain(qj, mu, self.noise_variance)
        if criterion not in CRITERIA:
            raise ValueError(
                f"Unknown selection criterion {criterion!r}; the regressor knows "
                f"{', '.join(map(repr, CRITERIA))}."
            )
        p = self.p
        exact = criterion == "exact" and p
        dtype = np.float32 if criterion == "matching_pursuit" else np.float64
        out = np.empty(len(J))
        for start in range(0, len(J), _STREAM_MAX):
            Jb = J[start : start + _STREAM_MAX]
            X_J = self._rows_of(Jb)
            Kmu, sq, KpK = self.rows.sum(
                _p_score, X_J, dtype, self.alpha, p, exact, self.n_threads
            )
            K_uJ = self._cross(self._Xu[:p], X_J) if p else np.zeros((0, len(Jb)))
            out[start : start + len(Jb)] = self._decrease_from(criterion, Jb, Kmu, sq, K_uJ, KpK)
        return out
