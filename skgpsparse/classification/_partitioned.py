"""The ADF state with its rows in partitions (a row store), e.g. on dask workers.

:class:`PartitionedADFState` is :class:`~._adf.ADFState` with the per-row arrays (``M``'s
columns, ``diag(A)``, ``f_hat``, the labels and ``k(x, x)``) kept beside each partition of a
:class:`~skgpsparse.rows._store.RowStore`. The driver keeps the ``p x p`` factor ``L``, ``beta``,
the sites, the basis rows ``X_u`` and two boolean masks over the rows (in the basis; no
remaining variance), from which it draws working sets as the in-memory state does. Per step:

1. the working set's per-row values (``f_hat_J``, ``diag(A)_J``, ``y_J``, ``M_.J``,
   ``x_J``) are fetched from the partitions that hold them; ``"entropy"`` and
   ``"info_gain"`` are scored from them on the driver;
2. for ``"nlp"`` / ``"nlp_all"`` every partition gets ``x_J``, ``M_.J`` and the candidates'
   site updates and returns its part of the tentative losses (the in-memory blocks over its
   rows), keeping its part of the posterior columns ``A_J.`` for the add;
3. the add sends the new row's scale and ``beta`` entry; each partition writes its part of
   the new row of ``M`` and updates ``diag(A)`` and ``f_hat`` (eq. (3)), and returns the rows
   that lost their variance.

With ``"nlp"`` / ``"nlp_all"`` on uniform working sets (:meth:`PartitionedADFState.speculate`)
the add of step 3 also returns the partitions' values of step 1 for the next working set,
drawn ahead with a copy of the random state (as the masks will be after the add; read after
the add on each partition, so they are the next step's values): two round trips per step
instead of three, the same draws as in memory. A draw that differs (the add left rows
without variance) is fetched as before.

Adaptive sampling (``"adaptive"``, additive-model paper eq. (11)) draws from the weights of
all candidates: they are gathered to the driver each step (``8 n`` bytes), so that the draws
are the in-memory draws. That is the one per-step transfer that grows with ``n``.
"""

import warnings
from types import SimpleNamespace

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import log_ndtr, ndtr

from ..kernels._columns import KernelColumns
from ..kernels._gradients import row_blocks
from ..linalg import cholesky_append, cholesky_delete
from ._adf import _KEPT_COLUMNS, _VAR_TOL, ADFState
from ..rows._store import in_order, read_only, state_scope
from ..selection import draw_ahead
from ._probit import moment_matching

__all__ = ["PartitionedADFState", "label_counts"]

_KEY = "adf_state"


# ---------------------------------------------------------------- on each partition
def _c_labels(part, positive):
    """The partition's labels in {-1, +1}: ``positive`` (a class label) against the rest."""
    return np.where(part.y == positive, 1.0, -1.0)


@state_scope(_KEY, resets=True)
def _c_init(part, kernel, centre, p_max, positive, var_floor):
    k_diag = np.asarray(kernel.diag(np.asarray(part.X, dtype=np.float64)), dtype=float)
    part.state[_KEY] = SimpleNamespace(
        cols=KernelColumns(kernel, part.X, centre=centre),
        y=_c_labels(part, positive),
        k_diag=k_diag,
        diag_A=k_diag.copy(),
        f_hat=np.zeros(part.n),
        M=np.zeros((p_max, part.n)),
        in_basis=np.zeros(part.n, dtype=bool),
        kept=None,
        var_floor=var_floor,
    )
    return _low(part)


@read_only
def _c_prior(part, kernel, positive):
    """``(max k(x, x), sum k(x, x), number of positives)`` of the partition."""
    k_diag = np.asarray(kernel.diag(np.asarray(part.X, dtype=np.float64)), dtype=float)
    return (np.array([np.max(k_diag, initial=0.0)]), float(np.sum(k_diag)),
            int(np.sum(_c_labels(part, positive) > 0)))


def _low(part):
    st = part.state[_KEY]
    return np.flatnonzero(~(st.diag_A > st.var_floor)) + part.offset


@read_only
def _c_rows(part, local, p):
    st = part.state[_KEY]
    return (st.f_hat[local], st.diag_A[local], st.y[local], st.M[:p, local].T,
            np.asarray(part.X[local]), st.k_diag[local])


@read_only
def _c_light(part, local):
    st = part.state[_KEY]
    return st.f_hat[local], st.diag_A[local], st.y[local]


@state_scope(_KEY)
def _c_score(part, J, own_local, X_J, M_J, k_diag_J, alpha, nu, bias, p, all_points, rows_per):
    """The partition's part of ``ADFState._tentative_nlp`` (the same blocks over its rows)."""
    st = part.state[_KEY]
    k = len(J)
    Z = st.cols.operand_of_rows(X_J)
    keep = k <= _KEPT_COLUMNS
    columns = np.empty((k, part.n)) if keep else None
    alpha, nu = alpha[:, None], nu[:, None]
    total = np.zeros(k)
    for rows in row_blocks(part.X, rows_per):
        K = st.cols.block(rows, Z)
        own = (own_local >= rows.start) & (own_local < rows.stop)
        own_rows, own_cols = own_local[own] - rows.start, np.flatnonzero(own)
        K[own_rows, own_cols] = k_diag_J[own]
        if p:
            T = M_J.T @ st.M[:p, rows]
            np.subtract(K.T, T, out=T)
        else:
            T = np.ascontiguousarray(K.T)
        if keep:
            columns[:, rows] = T
        z = alpha * T
        z += st.f_hat[rows] + bias
        z *= st.y[rows]
        T *= T
        T *= -nu
        T += st.diag_A[rows]
        np.maximum(T, 0.0, out=T)
        T += 1.0
        np.sqrt(T, out=T)
        z /= T
        loss = log_ndtr(z, out=z)
        if not all_points:
            loss[:, st.in_basis[rows]] = 0.0
            loss[own_cols, own_rows] = 0.0
        total += -loss.sum(axis=1)
    st.kept = (J, columns) if keep else None
    return total


@state_scope(_KEY)
def _c_add(part, j, x_j, j_local, k_diag_j, M_j, p, scale, beta_p):
    st = part.state[_KEY]
    hit = np.flatnonzero(st.kept[0] == j) if st.kept is not None else np.zeros(0, int)
    if hit.size:
        A_col = st.kept[1][hit[0]]
    else:
        A_col = st.cols.block(slice(None), st.cols.operand_of_rows(x_j[None, :]))[:, 0]
        if j_local >= 0:
            A_col[j_local] = k_diag_j
        if p:
            A_col -= M_j @ st.M[:p]
    mu = st.M[p]
    np.multiply(A_col, scale, out=mu)
    st.diag_A -= mu * mu
    st.f_hat += mu * beta_p
    low = float(np.min(st.diag_A, initial=np.inf))
    np.maximum(st.diag_A, 0.0, out=st.diag_A)
    if j_local >= 0:
        st.in_basis[j_local] = True
    st.kept = None
    return low, _low(part)


@state_scope(_KEY)
def _c_add_fetch(part, local, *args):
    """:func:`_c_add`, then the values of the rows ``local`` (None: no row) for the next step."""
    low, lows = _c_add(part, *args)
    return low, lows, (None if local is None else _c_rows(part, local, args[5] + 1))


@state_scope(_KEY)
def _c_remove(part, rotations, p, beta_last, k_local):
    st = part.state[_KEY]
    rotations.apply(st.M, overwrite=True)
    r = st.M[p - 1]
    st.diag_A += r * r
    st.f_hat -= beta_last * r
    r[:] = 0.0
    if k_local >= 0:
        st.in_basis[k_local] = False
    st.kept = None
    return _low(part)


@read_only
def _c_deletion(part, L, den, coef_f, bias):
    st = part.state[_KEY]
    p = L.shape[0]
    G = solve_triangular(L, st.M[:p], lower=True, trans="T")
    total = np.zeros(p)
    for start in range(0, part.n, 2048):
        cols = slice(start, min(start + 2048, part.n))
        Gc = G[:, cols]
        var = st.diag_A[cols] + Gc * Gc / den[:, None]
        f_new = st.f_hat[cols] + coef_f[:, None] * Gc
        z = st.y[cols] * (f_new + bias) / np.sqrt(1.0 + np.maximum(var, 0.0))
        total -= log_ndtr(z).sum(axis=1)
    return total


@read_only
def _c_weights(part, local, bias):
    st = part.state[_KEY]
    z = np.add(st.f_hat[local], bias)
    z *= -st.y[local]
    z /= np.sqrt(1.0 + st.diag_A[local])
    return ndtr(z)


@read_only
def _c_nlp(part, bias, all_points):
    st = part.state[_KEY]
    z = st.y * (st.f_hat + bias) / np.sqrt(1.0 + st.diag_A)
    loss = -log_ndtr(z)
    if not all_points:
        loss = loss[~st.in_basis]
    return float(np.sum(loss)), len(loss)


@state_scope(_KEY, resets=True)
def _c_release(part):
    part.state.pop(_KEY, None)


def label_counts(rows, kernel, positive):
    """``(mean k(x, x), fraction of positives)`` over the partitions' rows."""
    results = rows.map(_c_prior, kernel, positive)
    return sum(r[1] for r in results) / rows.n, sum(r[2] for r in results) / rows.n


# ---------------------------------------------------------------- on the driver
class PartitionedADFState(ADFState):
    """:class:`~._adf.ADFState` whose rows live in the partitions of ``rows``.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    rows : skgpsparse.rows._store.RowStore
        Training rows and class labels, in partitions.
    positive : label
        The class whose rows are ``+1`` (the others ``-1``).
    bias : float
    max_basis : int
    centre : ndarray of shape (n_features,)
        The mean training row, shared by every partition's kernel columns.
    chunk_size : int, default=None
        As :class:`~._adf.ADFState`'s (rows per scoring block in each partition).
    """

    def __init__(self, kernel, rows, positive, bias, max_basis, *, centre, chunk_size=None):
        self.kernel, self.rows, self.positive = kernel, rows, positive
        self.site_update = "moment_matching"
        self.n_threads = 1
        self.bias = float(bias)
        self.chunk_size = chunk_size
        self.centre = np.asarray(centre, dtype=np.float64)
        self.max_basis = pm = int(max_basis)
        n = rows.n
        k_max = max(r[0][0] for r in rows.map(_c_prior, kernel, positive))
        self._var_floor = _VAR_TOL * max(float(k_max), 1e-300)
        self.L = np.zeros((pm, pm))
        self.beta = np.zeros(pm)
        self.basis = np.zeros(pm, dtype=np.intp)
        self.site_precision = np.zeros(pm)
        self.site_mean = np.zeros(pm)
        self._Xu = np.zeros((pm, rows.n_features))
        self.in_basis = np.zeros(n, dtype=bool)
        self._low = np.zeros(n, dtype=bool)
        self.size = 0
        self._candidates = None
        self._fetched = None
        self._set_low(rows.map(_c_init, kernel, self.centre, pm, positive, self._var_floor))

    @property
    def n_samples(self):
        return self.rows.n

    def _set_low(self, lows):
        self._low[:] = False
        for low in lows:
            self._low[low] = True
        self._candidates = None

    def candidates(self):
        if self._candidates is None:
            self._candidates = np.flatnonzero(~self.in_basis & ~self._low)
        return self._candidates

    def speculate(self, selector, rng):
        """Fetch each next step's working-set values with this step's add.

        ``selector`` and ``rng`` are the ones the steps use; the next working set is
        predicted by :func:`~skgpsparse.selection.draw_ahead` (a copy of ``rng``'s state).
        """
        self._speculation = (selector, rng)

    def _next_working_set(self, j):
        """The working set the next step will draw if the add of ``j`` leaves every other
        row's variance, or None if it cannot be told."""
        selector, rng = getattr(self, "_speculation", None) or (None, None)
        if selector is None or self.size + 1 >= self.max_basis:
            return None
        self.in_basis[j], self._candidates = True, None  # as after the add
        try:
            J = draw_ahead(selector, self, rng, ("nlp", "nlp_all"))
        finally:
            self.in_basis[j], self._candidates = False, None
        return J if J is not None and len(J) else None

    def _values(self, J):
        """``(f_hat, diag_A, y, M_.J^T, X_J, k_diag)`` at ``J``, from the last fetch if it
        holds them (the state has not changed since), else fetched."""
        J = np.asarray(J, dtype=np.intp).reshape(-1)
        if self._fetched is not None:
            FJ, values = self._fetched
            pos = {int(j): i for i, j in enumerate(FJ)}
            if all(int(j) in pos for j in J):
                at = np.array([pos[int(j)] for j in J], dtype=np.intp)
                return tuple(v[at] for v in values)
        values = self.rows.gather(_c_rows, J, self.size)
        self._fetched = (J, values)
        return values

    def _cross(self, Xa, Xb):
        cols = KernelColumns(self.kernel, Xa, centre=self.centre)
        return cols.block(slice(None), cols.operand_of_rows(Xb))

    def sampling_weights(self, J):
        return self.rows.gather(_c_weights, J, self.bias)

    def score(self, criterion, J):
        J = np.asarray(J, dtype=np.intp).reshape(-1)
        if criterion in ("nlp", "nlp_all"):
            f_J, dA_J, y_J, MT_J, X_J, kd_J = self._values(J)
        else:  # entropy and info_gain need three numbers per candidate (often all of them)
            f_J, dA_J, y_J = self.rows.gather(_c_light, J)
        a = np.maximum(dA_J, 0.0)
        _, _, alpha, nu = moment_matching(f_J, a, y_J, self.bias)
        if criterion == "entropy":
            c = nu * (1.0 + a)
            scores = np.log1p(a * (1.0 - c)) - np.log1p(a)
        elif criterion == "info_gain":
            lam = 1.0 - nu * a
            scores = -0.5 * (-np.log(lam) + lam - 1.0 + alpha**2 * a)
        elif criterion in ("nlp", "nlp_all"):
            all_points = criterion == "nlp_all"
            parts = self.rows.split(J)
            own = {i: np.full(len(J), -1, dtype=np.intp) for i in range(self.rows.n_partitions)}
            for i, (where, local) in parts.items():
                own[i][where] = local
            rows_per = self._score_chunk_rows(len(J))
            args = {
                i: (J, own[i], X_J, MT_J.T, kd_J, alpha, nu, self.bias, self.size, all_points,
                    rows_per)
                for i in own
            }
            total = np.sum(self.rows.map_each(_c_score, args), axis=0)
            n, p = self.n_samples, self.size
            scores = total / n if all_points else total / max(n - p - 1, 1)
        else:
            raise ValueError(
                f"Unknown criterion {criterion!r} for the classifier; expected one of "
                "'entropy', 'info_gain', 'nlp', 'nlp_all'."
            )
        return np.where(a > self._var_floor, scores, np.inf)

    def add(self, j, site_precision=None, site_mean=None):
        j = int(j)
        p = self.size
        if p >= self.max_basis:
            raise ValueError(f"The basis is full (max_basis={self.max_basis}).")
        if self.in_basis[j]:
            raise ValueError(f"Point {j} is already in the basis.")
        f_j, dA_j, y_j, MT_j, X_j, kd_j = (v[0] for v in self._values([j]))
        if site_precision is None:
            a_j = max(dA_j, 0.0)
            prec, shift, _, _ = moment_matching(
                np.array([f_j]), np.array([a_j]), np.array([y_j]), self.bias
            )
            pj, mj = float(prec[0]), float(f_j + shift[0])
        else:
            pj, mj = float(site_precision), float(site_mean)
        sqrt_p = np.sqrt(pj)
        k_u = self._cross(self._Xu[:p], X_j[None, :])[:, 0] if p else np.zeros(0)
        b_col = np.sqrt(self.site_precision[:p]) * k_u * sqrt_p
        cholesky_append(self.L, b_col, 1.0 + pj * kd_j, size=p, overwrite_L=True)
        l_vec, l_last = self.L[p, :p], self.L[p, p]
        self.beta[p] = (sqrt_p * mj - l_vec @ self.beta[:p]) / l_last
        owner = self.rows.split([j])
        J_next = self._next_working_set(j)
        ahead = {} if J_next is None else self.rows.split(J_next)
        args = {
            i: (ahead[i][1] if i in ahead else None, j, X_j,
                int(owner[i][1][0]) if i in owner else -1, kd_j, MT_j, p, sqrt_p / l_last,
                self.beta[p])
            for i in range(self.rows.n_partitions)
        }
        results = self.rows.map_each(_c_add_fetch, args)
        self._warn_clipped(min(r[0] for r in results))
        self.basis[p] = j
        self._Xu[p] = X_j
        self.site_precision[p] = pj
        self.site_mean[p] = mj
        self.in_basis[j] = True
        self.size = p + 1
        self._fetched = None
        if ahead:  # the next working set's values, read after the add
            keys = list(ahead)
            self._fetched = (J_next, in_order([results[i][2] for i in keys], keys, ahead,
                                              len(J_next)))
        self._set_low([r[1] for r in results])

    def _warn_clipped(self, low):
        if low < 0.0 and low < -1e-6 * max(self._var_floor / _VAR_TOL, 1.0):
            warnings.warn(
                f"Posterior variances down to {low:.3g} were clipped at 0 (round-off in the "
                "ADF updates); the kernel may be badly scaled.",
                RuntimeWarning,
                stacklevel=3,
            )

    def remove(self, k):
        p = self.size
        k = int(k)
        if not 0 <= k < p:
            raise ValueError(f"`k` must be in [0, {p - 1}], got {k}.")
        _, rotations = cholesky_delete(self.L, k, size=p, overwrite_L=True)
        rotations.apply(self.beta, overwrite=True)
        j = int(self.basis[k])
        owner = self.rows.split([j])
        args = {
            i: (rotations, p, self.beta[p - 1], int(owner[i][1][0]) if i in owner else -1)
            for i in range(self.rows.n_partitions)
        }
        lows = self.rows.map_each(_c_remove, args)
        self.beta[p - 1] = 0.0
        self.in_basis[j] = False
        for arr in (self.basis, self.site_precision, self.site_mean, self._Xu):
            arr[k : p - 1] = arr[k + 1 : p].copy()
            arr[p - 1] = 0
        self.size = p - 1
        self._fetched = None
        self._set_low(lows)

    def deletion_scores(self):
        p, n = self.size, self.n_samples
        if not p:
            return np.zeros(0)
        u = self.basis[:p]
        f_u, _, _, MT_u, _, _ = self._values(u)
        L = self.L[:p, :p]
        G_u = solve_triangular(L, MT_u.T, lower=True, trans="T")  # G[:, u]
        s = np.sqrt(self.site_precision[:p])
        den = np.maximum(1.0 - s * G_u[np.arange(p), np.arange(p)], np.finfo(float).eps)
        coef_f = s * (f_u - self.site_mean[:p]) / den
        return self.rows.sum(_c_deletion, L, den, coef_f, self.bias) / n

    def release(self):
        """Free the partitions' per-row state (``M``: ``max_basis`` rows of ``n`` numbers)."""
        self.rows.map(_c_release)

    def nlp(self, *, all_points=False):
        total, count = self.rows.sum(_c_nlp, self.bias, all_points)
        return float(total / count) if count else 0.0
