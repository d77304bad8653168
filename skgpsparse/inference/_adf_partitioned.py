"""The ADF state with its rows in partitions (a row store), e.g. on cluster workers.

:class:`PartitionedADFState` is :class:`~skgpsparse.inference._adf.ADFState` with the per-row
arrays (``M``'s columns, ``diag(A)``, ``f_hat``, the labels and ``k(x, x)``) kept beside each
partition of a :class:`~skgpsparse.rows._store.RowStore`, in an
:class:`~skgpsparse.inference._adf_rows.ADFRows` whose computations are the in-memory state's; the
driver's side is the same :class:`~skgpsparse.inference._adf.ADFBasis`, and the criteria are
:mod:`skgpsparse.inference._criteria`'s. The driver keeps the ``p x p`` factor ``L``, ``beta``, the
sites, the basis rows ``X_u`` and two boolean masks over the rows (in the basis; no remaining
variance), from which it draws working sets as the in-memory state does. Per step:

1. the working set's per-row values (``f_hat_J``, ``diag(A)_J``, ``y_J``, ``M_.J``,
   ``x_J``) are fetched from the partitions that hold them; ``"entropy"`` and
   ``"info_gain"`` are scored from them on the driver;
2. for ``"nlp"`` / ``"nlp_all"`` every partition gets ``x_J``, ``M_.J`` and the candidates'
   site updates and returns its part of the tentative losses (the in-memory blocks over its
   rows), keeping its part of the posterior columns ``A_J.`` for the add;
3. the add sends the new row's scale and ``beta`` entry; each partition writes its part of
   the new row of ``M`` and updates ``diag(A)`` and ``f_hat`` (eq. (3)), and returns the rows
   that lost their variance.

With ``"nlp"`` / ``"nlp_all"`` (the criteria registered as tentative) on uniform working sets
(:meth:`PartitionedADFState.speculate`) the add of step 3 also returns the partitions' values
of step 1 for the next working set, drawn ahead with a copy of the random state (as the masks
will be after the add; read after the add on each partition, so they are the next step's
values): two round trips per step instead of three, the same draws as in memory. A draw that
differs (the add left rows without variance) is fetched as before.

Adaptive sampling (``"adaptive"``, additive-model paper eq. (11)) draws from the weights of
all candidates: they are gathered to the driver each step (``8 n`` bytes), so that the draws
are the in-memory draws. That is the one per-step transfer that grows with ``n``.
"""

from types import SimpleNamespace

import numpy as np
from scipy.linalg import solve_triangular

from ..kernels._columns import KernelColumns
from ..rows._store import in_order, read_only, state_scope
from ..selection import draw_ahead
from ._adf import ADFBasis
from ._adf_rows import ADFRows
from ._criteria import tentative_criteria

__all__ = ["PartitionedADFState", "label_counts"]

_KEY = "adf_state"
# Rows per block of a partition's deletion scores (the in-memory state's default).
_DELETION_ROWS = 2048


# ---------------------------------------------------------------- on each partition
def _c_labels(part, positive):
    """The partition's labels in {-1, +1}: ``positive`` (a class label) against the rest."""
    return np.where(part.y == positive, 1.0, -1.0)


def _k_diag(part, kernel):
    return np.asarray(kernel.diag(np.asarray(part.X, dtype=np.float64)), dtype=float)


@state_scope(_KEY, resets=True)
def _c_init(part, kernel, centre, p_max, positive, var_floor):
    part.state[_KEY] = SimpleNamespace(
        rows=ADFRows(KernelColumns(kernel, part.X, centre=centre), _c_labels(part, positive),
                     _k_diag(part, kernel), p_max),
        var_floor=var_floor,
    )
    return _low(part)


@read_only
def _c_prior(part, kernel, positive):
    """``(max k(x, x), sum k(x, x), number of positives)`` of the partition."""
    k_diag = _k_diag(part, kernel)
    return (np.array([np.max(k_diag, initial=0.0)]), float(np.sum(k_diag)),
            int(np.sum(_c_labels(part, positive) > 0)))


def _low(part):
    """Global indices of the partition's rows without remaining variance."""
    st = part.state[_KEY]
    return np.flatnonzero(~(st.rows.diag_A > st.var_floor)) + part.offset


@read_only
def _c_rows(part, local, p):
    rows = part.state[_KEY].rows
    return (rows.f_hat[local], rows.diag_A[local], rows.y[local], rows.M[:p, local].T,
            np.asarray(part.X[local]), rows.k_diag[local])


@read_only
def _c_light(part, local):
    rows = part.state[_KEY].rows
    return rows.f_hat[local], rows.diag_A[local], rows.y[local]


@state_scope(_KEY)
def _c_score(part, J, own, X_J, M_J, k_diag_J, alpha, nu, bias, likelihood, all_points,
             block_rows):
    """The partition's part of the tentative NLP sums (:meth:`ADFRows.tentative_nlp`)."""
    rows = part.state[_KEY].rows
    return rows.tentative_nlp(J, rows.columns.operand_of_rows(X_J), own, k_diag_J, M_J,
                              alpha, nu, bias, likelihood, all_points=all_points,
                              block_rows=block_rows)


@state_scope(_KEY)
def _c_add(part, j, x_j, own_j, k_diag_j, M_j, p, scale, beta_p):
    rows = part.state[_KEY].rows
    column, _ = rows.posterior_column(j, rows.columns.operand_of_rows(x_j[None, :]), own_j,
                                      k_diag_j, M_j)
    return rows.append_row(p, column, scale, beta_p, own_j), _low(part)


@state_scope(_KEY)
def _c_add_fetch(part, local, *args):
    """:func:`_c_add`, then the values of the rows ``local`` (None: no row) for the next step."""
    low, lows = _c_add(part, *args)
    return low, lows, (None if local is None else _c_rows(part, local, args[5] + 1))


@state_scope(_KEY)
def _c_remove(part, rotations, p, beta_last, own_k):
    part.state[_KEY].rows.remove_row(rotations, p, beta_last, own_k)
    return _low(part)


@read_only
def _c_deletion(part, L, den, coef_f, bias, likelihood):
    rows = part.state[_KEY].rows
    G = solve_triangular(L, rows.M[: L.shape[0]], lower=True, trans="T")
    return rows.deletion_losses(G, den, coef_f, bias, likelihood, block_rows=_DELETION_ROWS)


@read_only
def _c_weights(part, local, bias, likelihood):
    return part.state[_KEY].rows.error_probabilities(bias, likelihood)[local]


@read_only
def _c_nlp(part, bias, likelihood, all_points):
    rows = part.state[_KEY].rows
    loss = rows.losses(bias, likelihood)
    if not all_points:
        loss = loss[~rows.in_basis]
    return float(np.sum(loss)), len(loss)


@state_scope(_KEY, resets=True)
def _c_release(part):
    part.state.pop(_KEY, None)


def label_counts(rows, kernel, positive):
    """``(mean k(x, x), fraction of positives)`` over the partitions' rows."""
    results = rows.map(_c_prior, kernel, positive)
    return sum(r[1] for r in results) / rows.n, sum(r[2] for r in results) / rows.n


# ---------------------------------------------------------------- on the driver
class PartitionedADFState(ADFBasis):
    """The ADF posterior (:class:`~skgpsparse.inference._adf.ADFState`) whose rows live in the
    partitions of ``rows``.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    rows : skgpsparse.rows._store.RowStore
        Training rows and class labels, in partitions.
    positive : label
        The class whose rows are ``+1`` (the others ``-1``).
    bias : float
    max_basis : int
    likelihood : skgpsparse.likelihoods.Likelihood
        ``p(y | f + b)`` (the binary model's ``likelihood``).
    centre : ndarray of shape (n_features,)
        The mean training row, shared by every partition's kernel columns.
    chunk_size : int, default=None
        As :class:`~skgpsparse.inference._adf.ADFState`'s (rows per scoring block in each
        partition).
    """

    def __init__(self, kernel, rows, positive, bias, max_basis, *, likelihood, centre,
                 chunk_size=None):
        self.kernel, self.rows, self.positive = kernel, rows, positive
        self.site_update = "moment_matching"
        self.chunk_size = chunk_size
        self.centre = np.asarray(centre, dtype=np.float64)
        k_max = max(r[0][0] for r in rows.map(_c_prior, kernel, positive))
        self._init_basis(max_basis, bias, likelihood, k_max)
        n, pm = rows.n, self.max_basis
        self._Xu = np.zeros((pm, rows.n_features))
        self.in_basis = np.zeros(n, dtype=bool)
        self._low = np.zeros(n, dtype=bool)
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
            J = draw_ahead(selector, self, rng, tentative_criteria())
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
        """Adaptive sampling weights (eq. (11)) at ``J``, from the partitions that hold them."""
        return self.rows.gather(_c_weights, J, self.bias, self.likelihood)

    def candidate_marginals(self, J, *, tentative=False):
        """``(f_hat_J, diag(A)_J, y_J)``; for a ``tentative`` criterion with the rest of what
        its pass needs (kept for :meth:`tentative_nlp`), else three numbers per candidate
        (entropy and information gain often score all of them)."""
        if tentative:
            return self._values(J)[:3]
        return self.rows.gather(_c_light, J)

    def tentative_nlp(self, candidates, *, all_points):
        """NLP eq. (4) / NLP_a eq. (5) after adding each candidate: each partition's blocks
        (:meth:`~skgpsparse.inference._adf_rows.ADFRows.tentative_nlp`), keeping its part of
        ``A_J.``."""
        J = candidates.index
        _, _, _, MT_J, X_J, kd_J = self._values(J)
        own = {i: np.full(len(J), -1, dtype=np.intp) for i in range(self.rows.n_partitions)}
        for i, (where, local) in self.rows.split(J).items():
            own[i][where] = local
        args = {
            i: (J, own[i], X_J, MT_J.T, kd_J, candidates.alpha, candidates.nu, self.bias,
                self.likelihood, all_points, self._score_chunk_rows(len(J)))
            for i in own
        }
        return self._nlp_mean(np.sum(self.rows.map_each(_c_score, args), axis=0), all_points)

    def add(self, j, site_precision=None, site_mean=None):
        j = int(j)
        self._check_add(j)
        p = self.size
        f_j, dA_j, y_j, MT_j, X_j, kd_j = (v[0] for v in self._values([j]))
        if site_precision is None:
            pj, mj = self._moment_matched_site(f_j, dA_j, y_j)
        else:
            pj, mj = float(site_precision), float(site_mean)
        k_u = self._cross(self._Xu[:p], X_j[None, :])[:, 0] if p else np.zeros(0)
        scale = self._append_site(pj, mj, k_u, kd_j)
        owner = self.rows.split([j])
        J_next = self._next_working_set(j)
        ahead = {} if J_next is None else self.rows.split(J_next)
        args = {
            i: (ahead[i][1] if i in ahead else None, j, X_j,
                int(owner[i][1][0]) if i in owner else -1, kd_j, MT_j, p, scale, self.beta[p])
            for i in range(self.rows.n_partitions)
        }
        results = self.rows.map_each(_c_add_fetch, args)
        self._warn_clipped(min(r[0] for r in results))
        self._Xu[p] = X_j
        self.in_basis[j] = True
        self._record_site(j, pj, mj)
        self._fetched = None
        if ahead:  # the next working set's values, read after the add
            keys = list(ahead)
            self._fetched = (J_next, in_order([results[i][2] for i in keys], keys, ahead,
                                              len(J_next)))
        self._set_low([r[1] for r in results])

    def remove(self, k):
        rotations = self._delete_site(k)
        p, k = self.size, int(k)
        j = int(self.basis[k])
        owner = self.rows.split([j])
        args = {
            i: (rotations, p, self.beta[p - 1], int(owner[i][1][0]) if i in owner else -1)
            for i in range(self.rows.n_partitions)
        }
        lows = self.rows.map_each(_c_remove, args)
        self.in_basis[j] = False
        self._drop_site(k, (self._Xu,))
        self._fetched = None
        self._set_low(lows)

    def deletion_scores(self):
        p, n = self.size, self.n_samples
        if not p:
            return np.zeros(0)
        f_u, _, _, MT_u, _, _ = self._values(self.basis[:p])
        L = self.L[:p, :p]
        G_u = solve_triangular(L, MT_u.T, lower=True, trans="T")  # G[:, u]
        den, coef_f = self._deletion_coefficients(G_u[np.arange(p), np.arange(p)], f_u)
        return self.rows.sum(_c_deletion, L, den, coef_f, self.bias, self.likelihood) / n

    def release(self):
        """Free the partitions' per-row state (``M``: ``max_basis`` rows of ``n`` numbers)."""
        self.rows.map(_c_release)

    def nlp(self, *, all_points=False):
        total, count = self.rows.sum(_c_nlp, self.bias, self.likelihood, all_points)
        return float(total / count) if count else 0.0
