"""Shared machinery of the relevance vector machines: active design rows, MacKay M-step, SSEM loop.

Quiñonero-Candela & Winther, *Incremental Gaussian Processes* (the SSEM paper). An extended linear
model ``y(x) = sum_j w_j phi_j(x)`` (eq. 1) with one basis function per candidate training input,
``phi_j(x) = k(x, x_j)``, and optionally a constant one (the bias ``alpha_0`` of eq. 4), has a
Gaussian prior ``w_j ~ N(0, 1 / alpha_j)``. The hyperparameters ``alpha`` are learned by EM with
MacKay's update (eq. 12); a basis function whose ``alpha`` reaches ``L`` (``alpha_max``) is
pruned (``alpha = infinity``).

- :class:`ActiveDesign` stores the rows ``phi_j(X)`` of the active basis functions (``M x n``)
  in preallocated storage: adding one writes a row, pruning compresses rows. O(n M) memory.
- :func:`mackay_update` is eq. (12) for ``alpha``.
- :func:`run_subspace_em` is Figure 1: "ssem" starts with every ``alpha = L``, adds one basis
  function per EM step (eq. 13) and switches to batch EM on the active set once all are visited;
  "batch_em" starts from all basis functions with finite ``alpha``. Both stop when the relative
  likelihood increase drops below ``tol``.
"""

import numbers
import time

import numpy as np
from sklearn.gaussian_process.kernels import Kernel
from sklearn.utils._param_validation import Interval, StrOptions

from ..linalg import (
    cholesky_append,
    cholesky_delete,
    cholesky_downdate,
    cholesky_downdate_rank_k,
    cholesky_update_rank_k,
)
from ._fit_memory import check_design_growth

__all__ = [
    "ALPHA_FLOOR",
    "SSEM_PARAMETER_CONSTRAINTS",
    "ActiveDesign",
    "change_precisions",
    "run_estimator_em",
    "leading_identity",
    "mackay_update",
    "run_subspace_em",
]

# The estimators' ``_parameter_constraints`` of the parameters both RVMs take.
SSEM_PARAMETER_CONSTRAINTS = {
    "kernel": [Kernel, None],
    "method": [StrOptions({"ssem", "batch_em"})],
    "alpha_max": [Interval(numbers.Real, 0, None, closed="neither")],
    "bias": ["boolean"],
    "n_basis_functions": [Interval(numbers.Integral, 1, None, closed="left"), None],
    "max_iter": [Interval(numbers.Integral, 0, None, closed="left")],
    "tol": [Interval(numbers.Real, 0, None, closed="left")],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
}

# Smallest alpha the M-step returns: keeps A^-1/2 finite.
ALPHA_MIN = 1e-12
# alpha_j is kept >= ALPHA_FLOOR * (data precision of w_j alone), e.g. G_jj / s2 in regression:
# a prior at most 1e12 times wider than the likelihood keeps cond(B) <= 1 + 1e12 M. Without it
# nearly collinear basis functions (wide kernels, noise-free targets) drive alpha -> 0, weights
# to +-1e5 that cancel, and the E-step to round-off garbage.
ALPHA_FLOOR = 1e-12
# A downdate keeping less than this fraction of its pivot is done as delete + append instead.
DOWNDATE_KEEP = 1e-2
# Batch EM stops after this many consecutive steps with a relative gain below `tol`.
PATIENCE = 5
# With the add test, SSEM's batch phase revisits the inactive basis functions every
# REVISIT_EVERY steps and when it would stop, at most MAX_REVISITS times.
REVISIT_EVERY = 5
MAX_REVISITS = 10


class ActiveDesign:
    """Design rows of the active basis functions in growable storage.

    Attributes
    ----------
    size : int
        Number ``M`` of active basis functions.
    rows : ndarray of shape (M, n)
        View of the active rows ``phi_j(x_i)``.
    index : ndarray of shape (M,)
        Library entries of the active basis functions.
    alpha : ndarray of shape (M,)
        Their prior precisions.
    """

    def __init__(self, n, capacity=16, owner="ActiveDesign"):
        self.n, self.owner = n, owner
        self.size = 0
        self._rows = np.empty((max(capacity, 1), n))
        self._index = np.empty(max(capacity, 1), dtype=np.intp)
        self._alpha = np.empty(max(capacity, 1))

    @property
    def rows(self):
        return self._rows[: self.size]

    @property
    def index(self):
        return self._index[: self.size]

    @property
    def alpha(self):
        return self._alpha[: self.size]

    @alpha.setter
    def alpha(self, value):
        self._alpha[: self.size] = value

    def _reserve(self, m):
        cap = self._rows.shape[0]
        if m <= cap:
            return
        new = max(m, 2 * cap)
        check_design_growth(self.owner, new, self.n, cap)  # a clear MemoryError, not numpy's
        rows = np.empty((new, self.n))
        rows[: self.size] = self._rows[: self.size]
        self._rows = rows
        self._index = np.resize(self._index, new)
        self._alpha = np.resize(self._alpha, new)

    def append(self, rows, index, alpha):
        """Append ``k`` basis functions (rows ``(k, n)``) with precisions ``alpha``."""
        rows = np.atleast_2d(rows)
        k = rows.shape[0]
        self._reserve(self.size + k)
        sl = slice(self.size, self.size + k)
        self._rows[sl] = rows
        self._index[sl] = index
        self._alpha[sl] = alpha
        self.size += k

    def take(self, order):
        """Keep the active basis functions ``order`` (positions), in that order."""
        order = np.asarray(order, dtype=np.intp)
        k = order.shape[0]
        p = leading_identity(order)
        if p == k == self.size:
            return
        # rows before the first moved one stay where they are: O(n (M - p)) copying
        self._rows[p:k] = self._rows[: self.size][order[p:]]
        self._index[p:k] = self._index[: self.size][order[p:]]
        self._alpha[p:k] = self._alpha[: self.size][order[p:]]
        self.size = k

    def keep(self, mask):
        """Keep only the active basis functions where ``mask`` is true (order preserved)."""
        mask = np.asarray(mask, dtype=bool)
        k = int(mask.sum())
        if k == self.size:
            return
        self._rows[:k] = self._rows[: self.size][mask]
        self._index[:k] = self._index[: self.size][mask]
        self._alpha[:k] = self._alpha[: self.size][mask]
        self.size = k


def leading_identity(order):
    """Length of the prefix of ``order`` equal to ``0, 1, 2, ...``."""
    moved = np.flatnonzero(order != np.arange(len(order)))
    return int(moved[0]) if moved.size else len(order)


def mackay_update(gamma, mu, floor=None):
    """MacKay's update, SSEM paper eq. (12): ``alpha_j = gamma_j / mu_j^2``.

    ``gamma_j = 1 - alpha_j Sigma_jj`` is how well the data determine ``w_j``. A weight with
    ``mu_j = 0`` gets ``alpha = inf`` (it is pruned); ``alpha`` is kept >= ``ALPHA_MIN`` and
    >= ``ALPHA_FLOOR * floor`` where ``floor`` is the data precision of each weight alone.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.rvm._subspace_em import mackay_update
    >>> mackay_update(np.array([0.5, 0.2]), np.array([2.0, 0.0]))
    array([0.125,   inf])
    """
    gamma = np.clip(gamma, 0.0, 1.0)
    mu2 = mu * mu
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = np.where(mu2 > 0, gamma / np.where(mu2 > 0, mu2, 1.0), np.inf)
    alpha = np.maximum(alpha, ALPHA_MIN)
    if floor is not None:
        alpha = np.maximum(alpha, ALPHA_FLOOR * floor)
    return alpha


def change_precisions(L, G, s2, alpha, alpha_new, change, prune, counts=None):
    """Factor of ``Sigma^-1 = A + G / s2`` after an M-step, by updates of the factor ``L``.

    SSEM paper eq. (7): new precisions ``alpha_new`` change ``Sigma^-1`` by the diagonal
    ``diag(alpha_new - alpha)``, i.e. by ``V_+ V_+^T - V_- V_-^T`` with one scaled unit column
    ``sqrt(|delta_j|) e_j`` per changed ``alpha_j``. All increases are applied first, as one
    rank-k update (:func:`~skgpsparse.linalg.cholesky_update_rank_k`), then all decreases as one
    rank-k downdate (:func:`~skgpsparse.linalg.cholesky_downdate_rank_k`), so that every
    intermediate matrix is ``A' + G / s2`` with ``A' > 0``, positive definite. Each costs
    O((M - j0)^2 k) for ``k`` changes from position ``j0`` on, about O(M^3) when every
    ``alpha`` changes: the cost of the E-step, and no refactorisation. A decrease that would
    keep less than ``DOWNDATE_KEEP`` of its pivot (an ``alpha`` falling by orders of
    magnitude, as a new basis function leaving ``L`` does) is done as a Givens deletion of
    ``j`` and a re-append at the end, which is backward stable; if the rank-k downdate still
    fails, the decreases are applied one at a time with the same fallback. Pruned basis
    functions (eq. 13) are removed by :func:`~skgpsparse.linalg.cholesky_delete` first.

    Parameters
    ----------
    L : ndarray of shape (M, M)
        Lower factor of ``A + G / s2`` (not modified).
    G : ndarray of shape (M, M)
        ``Phi^T Phi`` of the active basis functions.
    s2 : float
        Noise variance (unchanged).
    alpha, alpha_new : ndarray of shape (M,)
        Current and proposed precisions.
    change, prune : ndarray of bool, shape (M,)
        Which ``alpha_new`` to apply, which basis functions to remove.
    counts : dict, optional
        Incremented counters: ``"rank_one"`` (alpha changes applied by the rank-k updates and
        downdates), ``"rank_k"`` (rank-k calls), ``"delete"`` and ``"move"``.

    Returns
    -------
    L_new : ndarray of shape (m, m)
        The new factor.
    order : ndarray of int, shape (m,)
        The positions (in ``0..M-1``) it covers, in its row order.
    alpha_order : ndarray of shape (m,)
        Their precisions (``alpha_new`` where applied, else ``alpha``).

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.rvm._subspace_em import change_precisions
    >>> Phi = np.array([[1.0, 0.5, 0.2], [0.3, 1.0, 0.4], [0.1, 0.2, 1.0], [0.5, 0.5, 0.5]])
    >>> G, a = Phi.T @ Phi, np.array([1.0, 2.0, 3.0])
    >>> L = np.linalg.cholesky(np.diag(a) + G / 0.1)
    >>> a_new = np.array([0.5, 1e10, 30.0])
    >>> L2, order, a2 = change_precisions(L, G, 0.1, a, a_new, a_new < 1e9, a_new >= 1e9)
    >>> order, a2
    (array([0, 2]), array([ 0.5, 30. ]))
    >>> np.allclose(L2, np.linalg.cholesky(np.diag(a2) + G[np.ix_(order, order)] / 0.1))
    True
    """
    counts = {} if counts is None else counts
    for key in ("rank_one", "rank_k", "delete", "move"):
        counts.setdefault(key, 0)
    M = L.shape[0]
    W = np.array(L)
    a = np.array(alpha, dtype=float)
    # pruning (alpha_j >= L, eq. 13): Givens deletion of row and column j, last first
    for j in np.flatnonzero(prune)[::-1]:
        cholesky_delete(W, j, size=M, overwrite_L=True)
        M -= 1
        counts["delete"] += 1
    order = np.flatnonzero(~prune).tolist()
    changed = np.flatnonzero(change & ~prune)
    delta = alpha_new[changed] - a[changed]  # eq. (7): Sigma^-1 + sum_j delta_j e_j e_j^T
    # 1. all increases: one rank-k update
    up = changed[delta > 0]
    if up.size:
        _diagonal_change(cholesky_update_rank_k, W, M, order, up, alpha_new[up] - a[up])
        a[up] = alpha_new[up]
        counts["rank_one"] += up.size
        counts["rank_k"] += 1
    # 2. decreases that would cancel their pivot: delete j and append it at the end
    down = changed[delta < 0]
    if down.size:
        piv = np.diagonal(W)[_positions(order, down)] ** 2
        collapse = piv + (alpha_new[down] - a[down]) <= DOWNDATE_KEEP * piv
        for j in down[collapse]:
            M = _move(W, M, G, s2, order, j, alpha_new[j], counts)
            a[j] = alpha_new[j]
        down = down[~collapse]
    # 3. the other decreases: one rank-k downdate (one at a time if it fails)
    if down.size:
        saved = W[:M, :M].copy()
        try:
            _diagonal_change(
                cholesky_downdate_rank_k, W, M, order, down, a[down] - alpha_new[down]
            )
            a[down] = alpha_new[down]
            counts["rank_one"] += down.size
            counts["rank_k"] += 1
        except np.linalg.LinAlgError:
            W[:M, :M] = saved
            for j in down:
                M = _downdate_one(W, M, G, s2, order, j, a[j], alpha_new[j], counts)
                a[j] = alpha_new[j]
    order = np.asarray(order, dtype=np.intp)
    return W[:M, :M], order, a[order]


def _positions(order, entries):
    """Rows of the factor that hold ``entries`` (``order`` lists the entry of each row)."""
    order = np.asarray(order, dtype=np.intp)
    inverse = np.empty(order.max() + 1, dtype=np.intp)
    inverse[order] = np.arange(len(order))
    return inverse[entries]


def _diagonal_change(func, W, M, order, entries, size):
    """``func`` (rank-k update or downdate) of ``W``'s factor by ``diag(size)`` at ``entries``:
    ``V`` has one column ``sqrt(size_c) e_(row of entry c)`` per entry."""
    V = np.zeros((M, len(entries)))
    V[_positions(order, entries), np.arange(len(entries))] = np.sqrt(size)
    func(W, V, size=M, overwrite_L=True)


def _move(W, M, G, s2, order, j, alpha_j, counts):
    """Delete ``j`` from the factor and append it at the end with precision ``alpha_j``."""
    p = order.index(j)
    cholesky_delete(W, p, size=M, overwrite_L=True)
    del order[p]
    try:
        cholesky_append(W, G[order, j] / s2, alpha_j + G[j, j] / s2, size=M - 1, overwrite_L=True)
    except np.linalg.LinAlgError:
        # numerically a combination of the others: it leaves the model
        counts["delete"] += 1
        return M - 1
    order.append(j)
    counts["move"] += 1
    return M


def _downdate_one(W, M, G, s2, order, j, alpha_j, alpha_new_j, counts):
    """Rank-one downdate of ``alpha_j`` to ``alpha_new_j``, or :func:`_move` if it fails."""
    p = order.index(j)
    v = np.zeros(M - p)
    v[0] = np.sqrt(alpha_j - alpha_new_j)
    block = W[p:M, p:M]
    saved = block.copy()
    try:
        cholesky_downdate(block, v, overwrite_L=True, overwrite_v=True)
        counts["rank_one"] += 1
        return M
    except np.linalg.LinAlgError:
        block[...] = saved
    return _move(W, M, G, s2, order, j, alpha_new_j, counts)


def relative_increase(new, old):
    """``(new - old) / |old|``, the SSEM stopping quantity (guarded near zero)."""
    return (new - old) / max(abs(old), 1e-300)


def run_subspace_em(
    model,
    library,
    *,
    method,
    alpha_init,
    max_iter,
    tol,
    rng,
    verbose=0,
    first=None,
    add_test=False,
):
    """Train ``model`` by Subspace EM (Figure 1) or by batch EM; return the history.

    Parameters
    ----------
    model : object
        Has ``add(entries, alpha)`` (make library ``entries`` active with precisions
        ``alpha``), ``em_step() -> log_likelihood`` (E-step on the active set, M-step, pruning
        of ``alpha >= L``) and ``n_active``; optionally ``subspace_step()`` (an SSEM step,
        else ``em_step`` is used), ``plan_visits(order)`` (told the sweep's order first) and
        ``visit_block() -> k`` (how many basis functions the next step adds; else 1); with
        ``add_test``, ``visit(entries) -> log_likelihood`` (a step with Tipping & Faul's add
        test) and ``revisit(library, min_gain) -> n_added``.
    library : ndarray of int
        Entries of the candidate basis functions.
    method : {"ssem", "batch_em"}
        "ssem": all ``alpha = L`` at first; one entry enters per EM step in random order (eq. 13),
        then batch EM on the active set. "batch_em": all entries enter with ``alpha_init``.
    alpha_init : float
        Initial precision of every basis function in batch EM.
    max_iter : int
        Maximum number of batch EM steps (after the SSEM sweep, or in total for batch EM).
    tol : float
        Stop when the relative likelihood increase of ``PATIENCE`` consecutive batch steps is
        below ``tol``.
    rng : numpy.random.RandomState
        Order in which SSEM visits the library.
    first : ndarray of int, optional
        Entries SSEM visits before the shuffled rest (the bias).
    add_test : bool, default=False
        SSEM only: each step offers its entries to ``model.visit`` (the add test) instead of
        adding them at ``L``; the batch phase calls ``model.revisit`` every ``REVISIT_EVERY``
        steps and when it would stop (at most ``MAX_REVISITS`` times), so that basis
        functions pruned in the sweep can return; it stops when a revisit adds none. A
        batch step then counts as quiet unless it beats the best likelihood so far by
        ``tol`` (round-off can make it oscillate at the top).

    Returns
    -------
    history : dict
        ``log_likelihood``, ``n_active``, ``cpu_time`` (per EM step, cumulative process time),
        ``n_sweep`` (steps of the SSEM sweep), ``n_iter`` (batch EM steps), ``converged``,
        ``n_revisits``.
    """
    hist = {"log_likelihood": [], "n_active": [], "cpu_time": []}
    t0 = time.process_time()

    def record(ll, phase):
        hist["log_likelihood"].append(ll)
        hist["n_active"].append(model.n_active)
        hist["cpu_time"].append(time.process_time() - t0)
        if verbose > 1 or (verbose and phase == "batch"):
            print(
                f"[{phase} {len(hist['log_likelihood'])}] log likelihood {ll:.6g}, "
                f"{model.n_active} active basis functions"
            )

    if method == "ssem":
        order = rng.permutation(library)
        if first is not None and len(first):
            order = np.concatenate([first, order[~np.isin(order, first)]])
        step = getattr(model, "subspace_step", None)
        plan = getattr(model, "plan_visits", None)
        if plan is not None:  # the model may prepare the visits' design rows in blocks
            plan(order)
        block = getattr(model, "visit_block", None)
        i = n_steps = 0
        while i < len(order):
            # eq. (13): R_n = {i in R_{n-1}: alpha_i < L} + {n}; it enters at alpha = L (§3:
            # "including some alpha_j previously set to infinity": a model may add a block)
            k = 1 if block is None else block()
            if add_test:
                ll = model.visit(order[i : i + k])
            else:
                model.add(order[i : i + k], None)
                ll = model.em_step() if step is None else step()
            i += k
            record(ll, "ssem")
            n_steps += 1
        hist["n_sweep"] = n_steps
    else:
        model.add(np.asarray(library), alpha_init)
        hist["n_sweep"] = 0
    converged = False
    n_iter = quiet = revisits = 0
    revisit = add_test and method == "ssem"
    prev = best = hist["log_likelihood"][-1] if hist["log_likelihood"] else None
    for n_iter in range(1, max_iter + 1):
        ll = model.em_step()
        record(ll, "batch")
        # the gain can dip while alphas still fall from L: wait for PATIENCE small steps
        if revisit:
            # with the add test nothing falls from L, and round-off can make the likelihood
            # oscillate (cond ~ 1e15): progress is a new best
            gain = relative_increase(ll, best) if prev is not None else np.inf
            best = ll if prev is None else max(best, ll)
            quiet = quiet + 1 if gain < tol else 0
        else:
            gain = relative_increase(ll, prev) if prev is not None else np.inf
            quiet = quiet + 1 if abs(gain) < tol else 0
        prev = ll
        due = quiet >= PATIENCE or n_iter % REVISIT_EVERY == 0
        if revisit and due and revisits < MAX_REVISITS:
            # Tipping & Faul's add test over the pruned and never admitted basis functions
            revisits += 1
            if model.revisit(library, tol * abs(ll)):
                quiet = 0
        if quiet >= PATIENCE:
            converged = True
            break
    hist["n_iter"] = n_iter
    hist["n_revisits"] = revisits
    hist["converged"] = converged
    return hist


def run_estimator_em(model, candidates, estimator, rng, **options):
    """:func:`run_subspace_em` as both RVMs run it: over ``candidates`` (a
    :class:`~._basis_functions.CandidateBasis`, the bias visited first), with the estimator's
    ``method``, ``max_iter``, ``tol`` and ``verbose`` and ``alpha_init="auto"``; ``options``
    (the regressor's ``add_test``) are passed on. Returns the history."""
    return run_subspace_em(
        model,
        candidates.library,
        method=estimator.method,
        alpha_init="auto",
        max_iter=estimator.max_iter,
        tol=estimator.tol,
        rng=rng,
        verbose=estimator.verbose,
        first=candidates.first,
        **options,
    )
