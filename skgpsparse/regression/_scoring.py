"""Scoring of candidate basis vectors for sparse MAP GP regression (forward-selection criteria).

The criteria of the regressor's ``selection`` strings, evaluated for a working set ``J`` of
candidates against the current state of :class:`~skgpsparse.regression._state.RegressionState`
(which inherits them from :class:`_CandidateScoring`): the exact decrease of the exchange
paper's cost (2) (Smola & Bartlett 2001), Keerthi & Chu's matching-pursuit decrease (DMAX) and
an information-gain score in the spirit of Seeger, Williams & Lawrence (2003). All candidates
of ``J`` are scored by one batched computation: a fresh working set in one streaming pass over
the training rows (its kernel columns formed chunk by chunk, never stored whole), a working
set that mostly repeats the previous one from a cache of kernel columns.
"""

import threading

import numpy as np
from scipy.linalg import solve_triangular

from ..kernels._columns import run_chunks

__all__ = ["CRITERIA", "info_gain", "streaming_sums"]

CRITERIA = ("exact", "matching_pursuit", "info_gain", "vfe")

# Criteria that need K_p^T K_J (a (p x n)(n x kappa) product per working set).
_NEED_KPK = ("exact", "vfe")
# Kernel blocks K(X, X_J) are computed for at most this many entries at a time.
_BLOCK_ENTRIES = 1 << 22
# Working sets of at most this many kernel entries (n kappa) can be scored through the column
# cache (512 MB of float64: n = 1,000,000 with the default kappa = 59 fits). The cache is used
# when at least half of a working set was in the previous one (a kept working set); a fresh
# working set is scored in one streaming pass instead, its columns never stored whole.
_CACHE_ENTRIES = 1 << 26
# Largest working set scored by the streaming pass (larger ones go by blocks of columns).
_STREAM_MAX = 4096
# Entries of a working set's kernel columns per chunk of the scoring pass (2 MB).
_SCORE_CHUNK_ENTRIES = 1 << 18
# Entries of the scoring pass's partial sums (32 MB).
_PARTIAL_ENTRIES = 1 << 22


def _solve_lower(L, b):
    return solve_triangular(L, b, lower=True, check_finite=False)


class _CandidateScoring:
    """Selection criteria of the regression state (a mixin of ``RegressionState``).

    Uses the state's ``n``, ``p``, ``y``, ``q``, ``kdiag``, ``jitter``, ``noise_variance``,
    ``n_threads``, ``alpha``, ``residual``, factors ``L`` and ``R``, the ``K_p^T`` storage
    ``_K``, the basis order ``_idx``, the kernel-column helper ``_columns``, ``_chunks`` and
    ``kernel_columns``; keeps ``_last_J`` and the column cache (``_cache_K``, ``_cache_sq``,
    ``_cache_idx``), which the state initialises, and stores the residual that the streaming
    pass forms on its way in the state's ``_residual``.
    """

    # Whitened rows (per-row noise, weights): ``J -> c_J^2``, the scale of a candidate's own
    # entry of its row of V (._row_scaled_state); None when the rows are not scaled.
    _own_entry_scale = None

    def _basis_rows(self, K_J):
        """``K_uJ``: the basis rows of the training rows' columns ``K_J``."""
        return K_J[self._idx[: self.p]]

    def _blocks(self, J):
        size = max(1, _BLOCK_ENTRIES // max(self.n, 1))
        for start in range(0, len(J), size):
            yield slice(start, start + size), J[start : start + size]

    def score(self, criterion, J):
        """Scores of candidates ``J`` (lower is better), batched over ``J``.

        ``"exact"`` and ``"matching_pursuit"`` return minus the decrease of cost (2),
        ``"info_gain"`` minus the approximate information gain (see :meth:`decrease`).
        """
        return -self.decrease(criterion, J)

    def decrease(self, criterion, J):
        """Decrease of the criterion if each candidate of ``J`` joined the basis.

        With ``k_j = K(X, x_j)``, ``k_uj = K(X_u, x_j)`` and the gradient of cost (2) in the new
        coefficient at zero, ``g_j = k_j^T mu - s2 k_uj^T alpha_p``:

        - ``"matching_pursuit"`` (Keerthi & Chu 2005, DMAX with the old coefficients fixed):
          ``1/2 g_j^2 / d_j``, ``d_j = |k_j|^2 + s2 (k_jj + jitter)``.
        - ``"exact"`` (Smola & Bartlett 2001; exchange paper eq. (3)): the exact decrease of the
          minimum of (2), ``1/2 g_j^2 / (d_j - c_j^T Sigma_p c_j)`` where ``c_j = K_p^T k_j +
          s2 k_uj`` is the new column of ``Sigma^-1``; ``c_j^T Sigma_p c_j = |R^-1 L^-1 c_j|^2``
          (bordering of ``Sigma^-1 = (L R)(L R)^T``). One ``(p x n)(n x kappa)`` product.
        - ``"info_gain"``: the idea of Seeger, Williams & Lawrence (2003): score a candidate by
          the information its own likelihood term would add, approximated so that only its
          marginal changes. Our derivation for the PP model: under the current model ``y_j``
          sees only the projection of ``f_j`` on the basis; including ``j`` lets it also inform
          the remainder ``r_j ~ N(0, q_j)``, ``q_j = k_jj - |V_.j|^2`` (the Nystrom error).
          Updating ``r_j`` with the residual ``mu_j`` at noise ``s2`` (new variance
          ``(1 - rho_j) q_j``, mean ``rho_j mu_j``, ``rho_j = q_j / (q_j + s2)``) and taking
          ``KL(new || old)`` gives ``1/2 [log(1 + q_j / s2) - rho_j + rho_j mu_j^2 / (q_j +
          s2)]``. It is 0 for points the basis already represents (``q_j = 0``), grows with the
          unexplained variance and with the residual, and costs O(1) per candidate from the
          maintained ``q`` and ``mu`` (O(n) per step over all remaining points).

        A working set that mostly repeats the previous one is scored from the column cache
        (:meth:`_cache_columns`); any other one of at most 4096 candidates in one streaming
        pass over the rows, which forms ``mu = y - K_p alpha_p`` and the candidates' kernel
        columns chunk by chunk (in cache) and accumulates ``K_J^T mu``, ``|k_j|^2`` and, for
        ``"exact"``, ``K_p^T K_J``; larger ones by blocks of columns.

        With several targets (``y`` of shape ``(n, m)``) each criterion is summed over the
        targets: they share the basis, and cost (2) is the sum of the targets' costs.
        """
        J = np.asarray(J, dtype=np.intp).reshape(-1)
        s2 = self.noise_variance
        if criterion == "info_gain":
            return info_gain(self.q[J], self.residual[J], s2)
        if criterion not in CRITERIA:
            raise ValueError(
                f"Unknown selection criterion {criterion!r}; the regressor knows "
                f"{', '.join(map(repr, CRITERIA))}."
            )
        repeated = np.count_nonzero(np.isin(J, self._last_J))
        self._last_J = J.copy()
        if len(J) * self.n <= _CACHE_ENTRIES and 2 * repeated >= len(J) > 0:
            slot_of_J = self._cache_columns(J)
            # Scored in slot order on the whole cache (no n x kappa copy), returned in J's.
            out = self._decrease_block(criterion, self._cache_idx, self._cache_K, self._cache_sq)
            return out[slot_of_J]
        if len(J) <= _STREAM_MAX:
            return self._decrease_streaming(criterion, J)
        out = np.empty(len(J))
        for sl, Jb in self._blocks(J):
            K_J = self.kernel_columns(Jb)  # n x kappa
            sq = np.einsum("ij,ij->j", K_J, K_J)
            out[sl] = self._decrease_block(criterion, Jb, K_J, sq)
        return out

    def _decrease_block(self, criterion, J, K_J, sq):
        """``decrease`` for the columns ``K_J = K(X, X_J)`` with squared norms ``sq``."""
        p = self.p
        KpK = self._K.transpose_times(K_J, p) if criterion in _NEED_KPK and p else None
        mu = self.residual
        Kmu = mu @ K_J if mu.ndim == 1 else mu.T @ K_J  # (kappa,) or (n_targets, kappa)
        return self._decrease_from(criterion, J, Kmu, sq, self._basis_rows(K_J), KpK)

    def _decrease_streaming(self, criterion, J):
        """``decrease`` in one pass over the rows (``K_J`` in chunks, never stored whole).

        With ``score_dtype=float32`` and ``"matching_pursuit"``, ``K_J`` is computed in single
        precision and ``K_J^T mu`` and ``|k_j|^2`` are summed in single precision within a
        chunk (in double across chunks); the residual stays double.
        """
        p, m = self.p, len(J)
        exact = criterion in _NEED_KPK and p
        dtype = np.float32 if criterion == "matching_pursuit" else np.float64
        Z = self._columns.operand(J, dtype)
        chunks = self._chunks(m, _SCORE_CHUNK_ENTRIES)
        Kmu, sq, KpK, mu = streaming_sums(
            self._columns, self._K, chunks, self.y, self.alpha, p, Z, exact, self.n_threads
        )
        self._residual = mu
        K_uJ = self._columns(self._idx[:p], J) if p else np.zeros((0, m))
        return self._decrease_from(criterion, J, Kmu, sq, K_uJ, KpK)

    def _decrease_from(self, criterion, J, Kmu, sq, K_uJ, KpK):
        """The criterion from ``K_J^T mu``, ``|k_j|^2``, ``K_uJ`` and (exact) ``K_p^T K_J``."""
        s2 = self.noise_variance
        # one row of g per target (Kmu and alpha are 2-D with several targets)
        g = Kmu - s2 * (self.alpha @ K_uJ if self.alpha.ndim == 1 else self.alpha.T @ K_uJ)
        d = sq + s2 * (self._kdiag_at(J) + self.jitter)
        if criterion == "exact" and self.p:
            C = _solve_lower(self.R, _solve_lower(self.L, KpK + s2 * K_uJ))
            d = d - np.einsum("ij,ij->j", C, C)
            # The Schur complement is >= s2 * jitter in exact arithmetic.
            d = np.maximum(d, s2 * self.jitter)
        gg = g * g if g.ndim == 1 else np.sum(g * g, axis=0)
        if criterion == "vfe":
            return self._bound_increase(J, gg, d, sq, K_uJ, KpK)
        return 0.5 * gg / np.maximum(d, np.finfo(float).tiny)

    def _bound_increase(self, J, gg, d, sq, K_uJ, KpK):
        """Increase of Titsias' bound (Titsias 2009, eq. (9)) if each of ``J`` joined.

        Appending ``j`` borders ``L`` with ``l = L^-1 k_uj``, ``l_pp^2 = k_jj + jitter - |l|^2``,
        and ``V`` with the row ``v = (k_j - K_p w) / l_pp``, ``w = L^-T l``; ``D = (l_pp
        r_pp)^2`` is the Schur complement of ``Sigma^-1`` that ``"exact"`` computes (``d`` on
        entry, before its correction). The bound ``DTC - m T / (2 s2)`` then gains
        ``g^2 / (2 s2 D)`` (the fit term: cost (2) drops by ``g^2 / (2 D)``), loses
        ``m/2 log(D / (s2 l_pp^2))`` (``log|C|`` gains ``log(r_pp^2 / s2)``) and gains
        ``m |v|^2 / (2 s2)`` (``T = sum_i q_i`` drops by ``|v|^2``), with
        ``|v|^2 l_pp^2 = |k_j|^2 - 2 w^T K_p^T k_j + |R^T l|^2 - s2 |l|^2``
        (``K_p^T K_p = L (R R^T - s2 I) L^T``). O(p^2) per candidate after ``K_p^T K_J``.
        """
        s2, tiny = self.noise_variance, np.finfo(float).tiny
        m = 1 if self.y.ndim == 1 else self.y.shape[1]
        p = self.p
        if p:
            l = _solve_lower(self.L, K_uJ)
            C = _solve_lower(self.R, _solve_lower(self.L, KpK + s2 * K_uJ))
            D = np.maximum(d - np.einsum("ij,ij->j", C, C), s2 * self.jitter)
            w = solve_triangular(self.L, l, lower=True, trans="T", check_finite=False)
            Rl = self.R.T @ l
            ll = np.einsum("ij,ij->j", l, l)
            v2 = sq - 2.0 * np.einsum("ij,ij->j", w, KpK) + np.einsum("ij,ij->j", Rl, Rl)
            v2 -= s2 * ll
        else:
            D, ll, v2 = d, 0.0, sq.astype(float)
        lpp2 = np.maximum(self.kdiag[J] + self.jitter - ll, 0.5 * self.jitter)
        # |v|^2 is at least the candidate's own entry's square and at most T (q stays >= 0)
        own = (lpp2 - self.jitter) ** 2 / lpp2
        if self._own_entry_scale is not None:  # whitened rows (._row_scaled_state)
            own = own * self._own_entry_scale(J)
        v2 = np.clip(v2 / lpp2, own, max(float(np.sum(self.q)), 0.0) + own)
        fit = 0.5 * gg / (s2 * np.maximum(D, tiny))
        return fit - 0.5 * m * np.log(np.maximum(D, tiny) / (s2 * lpp2)) + 0.5 * m * v2 / s2

    def _cache_columns(self, J):
        """Put ``K(X, X_J)`` in a cache of kernel columns; return each column's slot.

        The cache holds the columns of the last scored working set, in slots of an
        ``n x kappa`` Fortran-ordered array (a column is contiguous) with their squared norms.
        Columns of ``J`` already cached are reused in place; only the new ones are computed,
        into the slots of the columns that left. With a working set kept across steps (see
        :class:`~skgpsparse.selection.GreedySelector`'s ``keep_working_set``) that is one new
        kernel column per step instead of ``kappa`` (Keerthi & Chu 2005, section 4). ``J``
        must not repeat indices.
        """
        m = len(J)
        if self._cache_K is None or self._cache_K.shape[1] != m:
            self._cache_K = np.empty((self.n, m), order="F")
            self._cache_sq = np.empty(m)
            self._cache_idx = np.full(m, -1, dtype=np.intp)
        ci = self._cache_idx
        order = np.argsort(ci)
        pos = np.searchsorted(ci[order], J).clip(0, m - 1)
        hit = ci[order][pos] == J
        slot_of_J = np.where(hit, order[pos], -1)
        free = np.setdiff1d(np.arange(m), slot_of_J[hit], assume_unique=True)
        new = np.flatnonzero(~hit)
        slot_of_J[new] = free[: len(new)]
        if len(new):
            K_new = self.kernel_columns(J[new])
            self._cache_K[:, slot_of_J[new]] = K_new
            self._cache_sq[slot_of_J[new]] = np.einsum("ij,ij->j", K_new, K_new)
            ci[slot_of_J[new]] = J[new]
        return slot_of_J


def streaming_sums(columns, K, chunks, y, alpha, p, Z, exact, n_threads):
    """One pass over the rows for a working set's scores (its columns never stored whole).

    ``columns`` (a :class:`~skgpsparse.kernels._columns.KernelColumns`) gives the chunks of
    ``K_J = K(X, X_J)`` for the operand ``Z`` (in ``Z``'s dtype), ``K`` holds ``K_p^T`` by
    blocks; chunk by chunk the residual ``mu = y - K_p alpha`` is formed and ``K_J^T mu``,
    ``|k_j|^2`` and, when ``exact``, ``K_p^T K_J`` accumulated. Returns ``(K_J^T mu, |k_j|^2,
    K_p^T K_J or None, mu)``; on a row partition of a larger set, its parts of the sums.
    """
    m = Z.shape[0]
    single = Z.dtype == np.float32
    n = K.n
    # Consecutive chunks form groups with one partial sum each, at most _PARTIAL_ENTRIES
    # of them in all (K_p^T K_J is p x m per group); a group is one thread's work.
    width = p * m if exact else m
    groups = np.array_split(
        np.arange(len(chunks)), min(len(chunks), max(1, _PARTIAL_ENTRIES // width))
    )
    targets = y.shape[1:]  # () for one 1-D target, (n_targets,) for several
    mu = np.empty((n,) + targets)
    Kmu, sq = np.zeros((len(groups),) + targets + (m,)), np.zeros((len(groups), m))
    KpK = np.zeros((len(groups), p, m)) if exact else None
    rows = max(b - a for a, b in chunks)

    local = threading.local()  # one chunk buffer per thread

    def work(g):
        if getattr(local, "buf", None) is None:
            local.buf = np.empty((rows, m), dtype=Z.dtype if single else np.float64)
        buf = local.buf
        for i in groups[g]:
            a, b = chunks[i]
            K_c = columns.block(slice(a, b), Z, out=buf[: b - a])
            mu_c = mu[a:b]
            if p:
                Kp_c = K.chunk(a, b, p)
                if targets:
                    np.dot(Kp_c.T, alpha, out=mu_c)
                else:
                    np.dot(alpha, Kp_c, out=mu_c)
                np.subtract(y[a:b], mu_c, out=mu_c)
            else:
                mu_c[:] = y[a:b]
            mu_s = mu_c.astype(np.float32) if single else mu_c
            Kmu[g] += (mu_s.T if targets else mu_s) @ K_c
            sq[g] += np.einsum("ij,ij->j", K_c, K_c)
            if exact:
                KpK[g] += Kp_c @ K_c

    run_chunks(len(groups), work, n_threads)
    return Kmu.sum(axis=0), sq.sum(axis=0), (KpK.sum(axis=0) if exact else None), mu


def info_gain(qj, mu, s2):
    """The ``"info_gain"`` score from the Nystrom errors ``q_j`` and residuals ``mu_j``.

    ``1/2 [log(1 + q_j / s2) - rho_j + rho_j mu_j^2 / (q_j + s2)]``, ``rho_j = q_j / (q_j +
    s2)`` (see :meth:`_CandidateScoring.decrease`), summed over the targets.
    """
    denom = qj + s2
    rho = qj / denom
    if mu.ndim == 1:
        return 0.5 * (np.log1p(qj / s2) - rho + rho * mu * mu / denom)
    # one remainder r_j per target, each with the prior variance q_j
    m = mu.shape[1]
    return 0.5 * (m * (np.log1p(qj / s2) - rho) + rho * np.sum(mu * mu, axis=1) / denom)
