"""The RVM regression E- and M-steps on an active set, kept by Cholesky up/downdates (SSEM)."""

import numpy as np
from scipy.linalg import lapack, qr

from ..linalg import cholesky_append
from ._add_test import add_gain, add_statistics, sequential_adds
from ._basis_functions import basis_rows
from ._factor_cost import refactor_is_cheaper
from ._subspace_em import (
    ALPHA_FLOOR,
    ALPHA_MIN,
    DOWNDATE_KEEP,
    ActiveDesign,
    change_precisions,
    leading_identity,
    mackay_update,
)

__all__ = ["NOISE_GAP", "NOISE_RTOL"]

# SSEM sweep: a change of s2 (the one refactorisation) is applied when it exceeds this
# relative size (|log(s2_new / s2_old)|).
NOISE_RTOL = 0.1
# In the sweep s2 is re-estimated (a refactorisation) only after the number of visited basis
# functions has grown by this factor since the last time: O(log N) refactorisations.
NOISE_GAP = 1.1


def _solve_lower(L, b, trans):
    """``L^-1 b`` (``trans=0``) or ``L^-T b`` (``trans=1``) for a lower triangular ``L``: the
    LAPACK call of ``scipy.linalg.solve_triangular`` (same operands, same result) without its
    per-call checks, which dominate at the sweep's small sizes."""
    if L.flags.f_contiguous:
        x, info = lapack.dtrtrs(L, b, lower=1, trans=trans)
    else:  # a C-ordered factor is the upper factor L^T in Fortran order
        x, info = lapack.dtrtrs(L.T, b, lower=0, trans=1 - trans)
    if info != 0:  # pragma: no cover - S >= A keeps L invertible
        raise np.linalg.LinAlgError("RVM: the factor of Sigma^-1 is singular.")
    return x


# The sweep computes the design rows of the next VISIT_BLOCK planned visits in one kernel call
# (at most VISIT_BLOCK_ELEMENTS floats: 16 MB).
VISIT_BLOCK = 64
VISIT_BLOCK_ELEMENTS = 2**21
# From 2 * GROWTH_BLOCK active basis functions on, an SSEM step adds M // GROWTH_BLOCK of them.
GROWTH_BLOCK = 64
# A revisit offers the add test's best ceil(M / REVISIT_SHARE) inactive basis functions.
REVISIT_SHARE = 4


class _RegressionEM:
    """Exact E-step and MacKay M-step of the RVM on an active set (SSEM paper §2, eqs. 6-12).

    Keeps ``G = Phi^T Phi`` and ``h = Phi^T t`` over the active basis functions (grown one row
    and column per added function, O(n M)) and a lower Cholesky factor ``L L^T = S`` of the
    posterior precision ``S = Sigma^-1 = A + G / s2`` (eq. 7) in preallocated storage. In the
    Subspace EM sweep (:meth:`subspace_step`) adding basis function ``j`` at ``alpha_j = L``
    (eq. 13) borders ``S`` (:func:`skgpsparse.linalg.cholesky_append`, O(M^2)); the M-step's
    changes of every active ``alpha`` (eq. 12) are the diagonal change ``S + diag(alpha_new -
    alpha_old)``: one rank-k update for the increases and one rank-k downdate for the
    decreases, pruning by Givens deletions
    (:func:`skgpsparse.rvm._subspace_em.change_precisions`; O(M^3) at most, the E-step's
    order, but a Python loop over the rows from the first change on), or one LAPACK
    refactorisation (O(M^3 / 3) flops in BLAS-3, no per-row cost), whichever
    ``factor_update`` chooses (by default the cheaper one by
    :func:`skgpsparse.rvm._factor_cost.refactor_is_cheaper`). With :meth:`plan_visits` the
    design rows of the next ``VISIT_BLOCK`` basis functions are computed in one kernel call.

    The noise variance ``s2`` multiplies all of ``G``, so a change of ``s2`` is a full-rank
    change of ``S``: it always refactorises (O(M^3 / 3), LAPACK, about the cost of the
    E-step's ``diag(Sigma)``). In the sweep ``s2`` is therefore updated only when it moved
    by more than ``NOISE_RTOL`` and the visited basis functions have grown by ``NOISE_GAP``
    since its last update (O(log N) refactorisations per sweep); batch EM (:meth:`em_step`)
    updates ``s2`` and all ``alpha`` every step and refactorises once per step.

    With the add test (:meth:`visit`, :meth:`revisit`; :mod:`skgpsparse.rvm._add_test`) a
    visited basis function is appended at its optimal ``alpha`` only if it raises the
    likelihood, and pruned ones can come back in the batch phase.
    """

    def __init__(
        self,
        kernel,
        X,
        t,
        centers,
        bias_mask,
        noise_variance,
        learn_noise,
        alpha_max,
        noise_floor,
        factor_update="cost",
    ):
        n = X.shape[0]
        # how an SSEM step's alpha changes reach the factor: "update" (rank-k, Givens),
        # "refactor" (LAPACK), "cost" (the cheaper of the two by _factor_cost's model)
        self.factor_update = factor_update
        self.kernel, self.X, self.t = kernel, X, t
        self.n_eff, self.t_var = n, None  # rows counted, var(t): weighted (_weighted_rows)
        self.centers, self.bias_mask = centers, bias_mask
        self.s2, self.learn_noise = float(noise_variance), learn_noise
        self.alpha_max, self.noise_floor = alpha_max, noise_floor
        self.design = ActiveDesign(n, owner="RelevanceVectorRegressor")
        self._plan, self._plan_pos = None, 0  # the sweep's order of visits (plan_visits)
        self._G, self._h, self._L = np.empty((16, 16)), np.empty(16), np.zeros((16, 16))
        self.noise_clipped, self.n_fallback = False, 0
        # how the factor changed: refactorisations, appends, rank-one updates, deletions
        self.visits = self._noise_visit = 0  # basis functions visited by the sweep
        self._post = None  # (mu, resid) of the current factor, kept from the last M-step
        self._ll = self._ll_post = None  # its log likelihood, and the _post it belongs to
        self._kept = None  # (rows, position of each library entry) kept for the revisits
        # "alpha_refactor": M-steps of the sweep applied by refactorising instead
        keys = ("refactor", "alpha_refactor", "append", "rank_one", "rank_k", "delete", "move")
        # "add_test": basis functions added by the add test (visits and revisits)
        self.counts = dict.fromkeys((*keys, "add_test"), 0)

    @property
    def n_active(self):
        return self.design.size

    @property
    def L(self):
        """The factor ``L L^T = A + G / s2`` of the active basis functions."""
        M = self.design.size
        return self._L[:M, :M]

    @property
    def G(self):
        M = self.design.size
        return self._G[:M, :M]

    def _reserve(self, m):
        cap = self._G.shape[0]
        if m <= cap:
            return
        new = max(m, 2 * cap)
        M = self.design.size
        G, L = np.empty((new, new)), np.zeros((new, new))
        G[:M, :M], L[:M, :M] = self._G[:M, :M], self._L[:M, :M]
        self._G, self._L, self._h = G, L, np.resize(self._h, new)

    def plan_visits(self, entries):
        """Announce the order in which the sweep adds ``entries``, one per :meth:`add`: their
        design rows are then computed ``VISIT_BLOCK`` at a time, one kernel call per block."""
        self._plan, self._plan_pos = np.asarray(entries), 0
        self._block, self._block_start = None, 0

    def visit_block(self):
        """How many basis functions the next SSEM step adds: one (eq. 13) while the active set
        is below ``2 * GROWTH_BLOCK``, then ``M // GROWTH_BLOCK`` (§3 grows the model by "some"
        alpha_j per step), so that a step's O(M^3) E-step and factor serve more visits."""
        return max(1, self.design.size // GROWTH_BLOCK)

    def _rows(self, entries):
        """Design rows ``phi_j(X)`` of ``entries``, from the planned block when they are next."""
        plan, pos, k = self._plan, self._plan_pos, len(entries)
        if plan is None or not np.array_equal(plan[pos : pos + k], entries):
            return self._design_rows(entries)
        self._plan_pos += k
        if self._block is None or pos + k > self._block_start + len(self._block):
            size = int(np.clip(VISIT_BLOCK_ELEMENTS // len(self.t), k, max(k, VISIT_BLOCK)))
            block = plan[pos : pos + size]
            self._block = self._design_rows(block)
            self._block_start = pos
        return self._block[pos - self._block_start : pos - self._block_start + k]

    def add(self, entries, alpha):
        """Make library ``entries`` active with precision ``alpha`` (``None``: ``L``)."""
        rows = self._rows(entries)
        # the sweep's entries (eq. 13) come at alpha = L and are appended to the factor
        from_sweep = alpha is None
        if alpha is None:
            alpha = self.alpha_max
        elif isinstance(alpha, str):  # "auto"
            # prior variance of y(x_i) sum_j phi_j(x_i)^2 / alpha ~ var(t) on average
            t_var = np.var(self.t) if self.t_var is None else self.t_var
            alpha = np.einsum("ij,ij->", rows, rows) / (self.n_eff * max(t_var, self.s2))
        if from_sweep:
            self.visits += len(entries)
        self._append(rows, entries, alpha, from_sweep)

    def _append(self, rows, entries, alpha, bordered):
        """Append basis functions ``rows`` with precisions ``alpha``: border the factor one row
        at a time (``bordered``) or refactorise."""
        M, k = self.design.size, len(entries)
        self._reserve(M + k)
        G = self._G
        # the new columns of G = Phi^T Phi and h = Phi^T t: O(n M k)
        G[:M, M : M + k] = self.design.rows @ rows.T
        G[M : M + k, :M] = G[:M, M : M + k].T
        G[M : M + k, M : M + k] = rows @ rows.T
        self._h[M : M + k] = rows @ self.t
        self.design.append(rows, entries, alpha)
        self._post = None
        try:
            for m in range(M, M + k) if bordered else ():
                # j enters at alpha_j (eq. 13: L); S gains the row [G_j. / s2, alpha_j + G_jj / s2]
                cholesky_append(
                    self._L,
                    G[:m, m] / self.s2,
                    self.design.alpha[m] + G[m, m] / self.s2,
                    size=m,
                    overwrite_L=True,
                )
                self.counts["append"] += 1
            if bordered:
                return
        except np.linalg.LinAlgError:  # pragma: no cover - the pivot is alpha_j + s_j > 0
            pass
        self.refactor()

    def _current(self):
        """``(mu, t - Phi mu)`` of the current factor (eq. 6), kept until the model changes."""
        if self._post is None:
            self._post = self.posterior()
        return self._post

    def _current_log_likelihood(self):
        """Eq. (11) for the current model, kept with its posterior (:meth:`_current`)."""
        post = self._current()
        if self._ll_post is not post:
            self._ll, self._ll_post = self.log_likelihood(*post), post
        return self._ll

    def _solve(self, B):
        """``L^-1 B`` for the current factor."""
        return _solve_lower(self.L, B, 0)

    def _add_passing(self, rows, entries, min_gain):
        """Tipping & Faul's add test on candidate ``rows``: append, one at a time and the best
        first, those whose optimal ``alpha = s^2 / (q^2 - s)`` raises the log likelihood by
        more than ``min_gain`` (:func:`skgpsparse.rvm._add_test.sequential_adds`)."""
        s, q, P = add_statistics(
            self.L, self.design.rows, self._current()[1], self.s2, rows, solve=self._solve
        )
        norm = np.einsum("ij,ij->i", rows, rows) / self.s2
        picks, alpha, _ = sequential_adds(s, q, P, min_gain, norm)
        if picks.size:
            self._append(rows[picks], entries[picks], alpha, True)
            self.counts["add_test"] += picks.size
        return picks.size

    def visit(self, entries):
        """An SSEM step with the add test (``add_test=True``); returns the log likelihood.

        The paper's step (eq. 13 and Figure 1, steps 2-4) lets ``entries`` in at ``alpha = L``
        and takes an EM step. Here those whose ``q^2 > s`` enter at their optimal ``alpha``
        (a sure gain, where ``alpha = L`` gains nothing until later M-steps bring it down),
        then the step (:meth:`subspace_step`) runs; if none passes, the model is unchanged: a
        lone ``alpha_j = L`` with ``q_j^2 <= s_j`` returns to ``L`` anyway (MacKay's update
        from ``alpha_j``, ``s_j (alpha_j + s_j) / q_j^2``, is then above it), so no E-step is
        spent on it.
        """
        added = self._add_passing(self._rows(entries), np.asarray(entries), 0.0)
        # the noise update's NOISE_GAP counts the admitted basis functions: s2 follows the
        # model's growth, not the (mostly rejected) visits
        self.visits += added
        if added:
            return self.subspace_step()
        return self._current_log_likelihood()

    def revisit(self, library, min_gain):
        """Add test over every inactive ``library`` entry (pruned or never admitted); the best
        ``ceil(M / REVISIT_SHARE)`` by gain are candidates for :meth:`_add_passing`.

        Each candidate needs ``s_i`` and ``q_i``: its design row (one kernel call per
        ``VISIT_BLOCK_ELEMENTS`` floats) and O(n M + M^2); returns how many were added.
        """
        rest = np.setdiff1d(library, self.design.index)
        if not rest.size:
            return 0
        resid, gain = self._current()[1], np.empty(rest.size)
        size = max(1, VISIT_BLOCK_ELEMENTS // len(self.t))
        for a in range(0, rest.size, size):
            e = rest[a : a + size]
            rows = self._library_rows(e, library)
            s, q, _ = add_statistics(
                self.L, self.design.rows, resid, self.s2, rows, cross=False, solve=self._solve
            )
            gain[a : a + size] = add_gain(s, q)[0]
        best = np.argsort(-gain)[: -(-max(self.design.size, 1) // REVISIT_SHARE)]
        best = np.sort(best[gain[best] > min_gain])
        if not best.size:
            return 0
        e = rest[best]
        return self._add_passing(self._library_rows(e, library), e, min_gain)

    def _library_rows(self, entries, library):
        """Design rows of ``entries``. When all of ``library`` fits in ``VISIT_BLOCK_ELEMENTS``
        floats (16 MB) its rows are computed once and kept: later revisits need no kernel
        call."""
        if self._kept is None and len(library) * len(self.t) <= VISIT_BLOCK_ELEMENTS:
            rows = self._design_rows(library)
            where = np.full(len(self.centers), -1, dtype=np.intp)
            where[library] = np.arange(len(library))
            self._kept = (rows, where)
        if self._kept is None:
            return self._design_rows(entries)
        return self._kept[0][self._kept[1][entries]]

    def _design_rows(self, entries):
        """Design rows ``phi_j(X)`` of library ``entries`` (one kernel call)."""
        return basis_rows(self.kernel, self.X, self.centers[entries], self.bias_mask[entries])

    def _factor(self, order, alpha, s2, count="refactor"):
        """Lower Cholesky factor of ``S = A + G / s2`` over positions ``order`` (new array)."""
        G = self.G[np.ix_(order, order)]
        S = G / s2
        S.flat[:: len(order) + 1] += alpha
        self.counts[count] += 1
        # LAPACK directly (what scipy.linalg.cholesky(lower=True) calls), without its wrappers
        L, info = lapack.dpotrf(S, lower=1, clean=1)
        if info == 0:
            return L
        # Rounding in G (nearly collinear basis functions) lost S > 0: factor
        # S = [Phi / s; A^1/2]^T [Phi / s; A^1/2] from a QR instead, O(n M^2).
        Psi = self.design.rows[order].T / np.sqrt(s2)
        R = qr(np.vstack([Psi, np.diag(np.sqrt(alpha))]), mode="r", check_finite=False)[0]
        R = R[: len(order)]
        return R.T * np.where(np.diag(R) < 0, -1.0, 1.0)

    def refactor(self):
        """``L L^T = A + G / s2`` from scratch for the current ``alpha`` and ``s2``."""
        M = self.design.size
        if M:
            self._L[:M, :M] = self._factor(np.arange(M), self.design.alpha, self.s2)
        self._post = None

    def posterior(self, L=None, order=None, s2=None):
        """Eq. (6): ``mu = S^-1 h / s2`` over positions ``order``, and ``t - Phi mu``."""
        L = self.L if L is None else L
        s2 = self.s2 if s2 is None else s2
        M = self.design.size
        order = np.arange(M) if order is None else order
        if len(order) == 0:
            return np.empty(0), self.t.copy()
        mu = _solve_lower(L, _solve_lower(L, self._h[:M][order], 0), 1) / s2
        full = np.zeros(M)
        full[order] = mu
        return mu, self.t - self.design.rows.T @ full

    def log_likelihood(self, mu, resid, L=None, alpha=None, s2=None):
        """Eq. (11): ``log N(t | 0, s2 I + Phi A^-1 Phi^T)`` as ``-1/2 [n log 2 pi s2 +
        log|S| - log|A| + |t - Phi mu|^2 / s2 + mu^T A mu]`` (determinant lemma)."""
        L = self.L if L is None else L
        alpha = self.design.alpha if alpha is None else alpha
        s2 = self.s2 if s2 is None else s2
        n = self.n_eff
        logdet = 2.0 * np.sum(np.log(np.diag(L))) - np.sum(np.log(alpha))
        data = resid @ resid / s2 + np.sum(alpha * mu * mu)
        return -0.5 * (n * np.log(2 * np.pi * s2) + logdet + data)

    def e_step(self):
        """Eqs. (6)-(7): ``mu``, the residual, ``diag(Sigma)`` and ``gamma = 1 - alpha
        Sigma_jj``; ``Sigma = L^-T L^-1`` needs the inverse factor, O(M^3 / 3)."""
        M = self.design.size
        mu, resid = self.posterior() if self._post is None else self._post
        if M == 0:
            return mu, resid, np.empty(0), np.empty(0)
        Linv, info = lapack.dtrtri(self.L, lower=1)
        if info != 0:  # pragma: no cover - S >= A keeps L invertible
            raise np.linalg.LinAlgError("RVM: the factor of Sigma^-1 is singular.")
        sigma_diag = np.einsum("ij,ij->j", Linv, Linv)
        gamma = np.clip(1.0 - self.design.alpha * sigma_diag, 0.0, 1.0)
        return mu, resid, sigma_diag, gamma

    def _m_step(self, rule, mu, gamma, sigma_diag, resid, noise=True):
        """``(alpha, s2)`` by MacKay's update (eq. 12) or by the EM update (§2)."""
        M, n = self.design.size, self.n_eff
        s2 = self.s2
        if self.learn_noise and noise:
            if rule == "mackay":  # eq. (12): s2 = |t - Phi mu|^2 / (N - sum gamma)
                s2 = (resid @ resid) / max(n - gamma.sum(), 1e-3)
            else:  # EM: s2 = (|t - Phi mu|^2 + s2_old sum gamma) / N
                s2 = (resid @ resid + self.s2 * gamma.sum()) / n
            if s2 < self.noise_floor:
                self.noise_clipped = True
                s2 = self.noise_floor
        # the floor never raises an alpha (with the old s2), so EM stays an ascent step
        floor = np.minimum(np.diag(self._G)[:M] / self.s2, self.design.alpha / ALPHA_FLOOR)
        if rule == "mackay":  # eq. (12): alpha_j = gamma_j / mu_j^2
            alpha = mackay_update(gamma, mu, floor=floor)
        else:  # EM (§2): alpha_j = 1 / (mu_j^2 + Sigma_jj)
            alpha = np.maximum(
                1.0 / (mu * mu + sigma_diag), np.maximum(ALPHA_MIN, ALPHA_FLOOR * floor)
            )
        return alpha, s2

    def _commit(self, L, order, alpha, s2, post):
        """Make the factor ``L`` over positions ``order`` with ``alpha`` the model's."""
        M, k = self.design.size, len(order)
        p = leading_identity(order)
        if p < k or k < M:
            # G's leading p x p block stays; the rest is permuted, O(M (M - p))
            tail = order[p:]
            G = self._G
            G[p:k, :k] = G[np.ix_(tail, order)]
            G[:p, p:k] = G[p:k, :p].T
            self._h[p:k] = self._h[:M][tail]
            self.design.take(order)
        self.design.alpha = alpha
        self._L[:k, :k] = L
        self.s2 = s2
        self._post = post

    def em_step(self, estep=None, reorder=False):
        """One batch EM step: E-step, M-step of every ``alpha`` and ``s2``, pruning of
        ``alpha >= L``, one refactorisation of the pruned ``S``; returns the log marginal
        likelihood of the updated model.

        The M-step is MacKay's update (eq. 12). It is not an EM step and can lower the
        likelihood (rarely; mostly when the ``ALPHA_FLOOR`` binds); then the step is redone with
        the EM update of §2, which cannot. With ``reorder`` (the sweep's noise updates) the new
        factor lists the basis functions whose ``alpha`` is at its floor first: those stay
        fixed while ``s2`` falls, so the following rank-k changes start further down.
        """
        mu, resid, sigma_diag, gamma = self.e_step() if estep is None else estep
        ll0 = self.log_likelihood(mu, resid)
        for rule in ("mackay", "em"):
            alpha, s2 = self._m_step(rule, mu, gamma, sigma_diag, resid)
            order = np.flatnonzero(alpha < self.alpha_max)
            if reorder:
                # rows whose alpha sits at the floor (fixed while s2 falls) first: the sweep's
                # rank-k changes then start further down the factor
                at_floor = alpha[order] <= ALPHA_FLOOR * np.diag(self._G)[order] / self.s2
                order = np.concatenate([order[at_floor], order[~at_floor]])
            L = self._factor(order, alpha[order], s2) if len(order) else np.empty((0, 0))
            mu_new, resid_new = self.posterior(L, order, s2)
            ll = self.log_likelihood(mu_new, resid_new, L, alpha[order], s2)
            if ll >= ll0 - 1e-12 * abs(ll0) or rule == "em":
                break
            self.n_fallback += 1
        self._commit(L, order, alpha[order], s2, (mu_new, resid_new))
        return ll

    def subspace_step(self):
        """One SSEM step (Figure 1, steps 3-4) on the factor.

        E-step in the active subspace, then the M-step (eq. 12) of every active ``alpha``
        (step 4: "for all alpha_j such that j in R_n"): all changes are applied to the factor
        at once, the increases as one rank-k update and the decreases as one rank-k downdate,
        and those reaching ``L`` are pruned by Givens deletions
        (:func:`skgpsparse.rvm._subspace_em.change_precisions`), or by one refactorisation when
        that is cheaper (:meth:`_apply`). If MacKay's update would lower the
        likelihood, the step is redone with the EM update of §2, which cannot. ``s2`` keeps its
        value unless eq. (12) moves it by more than ``NOISE_RTOL`` and the number of visited
        basis functions has grown by ``NOISE_GAP`` since its last update: then the step is a
        batch step (:meth:`em_step`), the sweep's one kind of refactorisation, at most
        ``log N / log NOISE_GAP`` times per sweep.
        """
        estep = mu, resid, sigma_diag, gamma = self.e_step()
        if self.learn_noise and self.visits >= NOISE_GAP * self._noise_visit:
            s2 = self._m_step("mackay", mu, gamma, sigma_diag, resid)[1]
            if abs(np.log(s2 / self.s2)) > NOISE_RTOL:
                self._noise_visit = self.visits
                return self.em_step(estep, reorder=True)
        ll0 = self.log_likelihood(mu, resid)
        old = self.design.alpha
        for rule in ("mackay", "em"):
            alpha, _ = self._m_step(rule, mu, gamma, sigma_diag, resid, noise=False)
            prune = alpha >= self.alpha_max
            # step 4: every active alpha takes its new value (exactly unchanged ones are skipped)
            L, order, a = self._apply(alpha, ~prune & (alpha != old), prune)
            mu_new, resid_new = self.posterior(L, order)
            ll = self.log_likelihood(mu_new, resid_new, L, a)
            if ll >= ll0 - 1e-12 * abs(ll0) or rule == "em":
                break
            self.n_fallback += 1
        self._commit(L, order, a, self.s2, (mu_new, resid_new))
        return ll

    def set_alpha(self, alpha):
        """Give the active basis functions precisions ``alpha`` (pruning ``alpha >= L``) by
        rank-k updates and downdates and deletions of the factor, without refactorising."""
        prune = alpha >= self.alpha_max
        L, order, a = self._apply(alpha, ~prune & (alpha != self.design.alpha), prune)
        self._commit(L, order, a, self.s2, self.posterior(L, order))

    def _apply(self, alpha, change, prune):
        """Factor after pruning ``prune`` and setting ``alpha[change]``, on a copy: by updates
        of the factor or by one refactorisation, whichever ``factor_update`` chooses (the
        same matrix ``A + G / s2`` of eq. 7 either way)."""
        old = self.design.alpha
        refactor = self.factor_update == "refactor" or (
            self.factor_update == "cost"
            and refactor_is_cheaper(
                old, alpha, change, prune, np.diagonal(self.L) ** 2, DOWNDATE_KEEP
            )
        )
        if not refactor:
            return change_precisions(
                self.L, self.G, self.s2, old, alpha, change, prune, self.counts
            )
        order = np.flatnonzero(~prune)
        a = np.where(change, alpha, old)[order]
        L = self._factor(order, a, self.s2, "alpha_refactor") if len(order) else np.empty((0, 0))
        return L, order, a
