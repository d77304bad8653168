"""The all-rows EP (:mod:`skgpsparse.inference._ep`) with the rows in the partitions of a row
store.

Everything EP needs from the ``n`` rows is a sum over rows or a per-row quantity under the
``p x p`` posterior of ``w`` (:mod:`skgpsparse.inference._ep_passes`), so each partition ``i``
keeps its rows' part of the prior (``V_i = L^-1 K_ui``, ``Lambda_i``: a
:class:`~skgpsparse.inference._ep.SparsePrior` of its rows, under the driver's factor ``L`` of
``K_uu``), its labels and its sites, and:

- a parallel EP sweep (:func:`~skgpsparse.inference._ep_passes.ep_sweep`) sends every partition the
  posterior ``(L_B, mean_w)`` and gets back its largest site change and its part of the next
  system, ``V_i G_i V_i^T`` and ``V_i a_i`` (``p x p`` and ``p``); the driver adds them and
  factors ``B`` as the in-memory loop does (:func:`~skgpsparse.inference._ep.all_rows_ep`: the same
  damping rule and stopping test, so the same number of sweeps to rounding; for a likelihood
  that is not log-concave also its proper step, :mod:`skgpsparse.inference._ep_signed`: a step
  that leaves ``B`` indefinite or an ``h_i`` not positive is halved, the partitions forming the
  shorter step's system without taking it);
- the ADF start (:func:`~skgpsparse.inference._ep_passes.adf_sites`) is sequential over blocks of
  rows: the partitions run one after another, each continuing the blocks of the previous one with
  the running system ``(S, V a)`` and posterior (a block cut by a partition boundary is finished by
  the next partition under the same posterior), so its sites are the in-memory ADF's;
- the evidence adds the partitions' sums over rows
  (:func:`~skgpsparse.inference._ep.evidence_row_terms`) to the driver's
  ``-log|L_B| + |L_B^-1 V a|^2/2``.

Per sweep the driver sends ``O(p^2)`` numbers to each partition and gets ``O(p^2)`` back;
the partitions' work is the in-memory sweep's over their rows, in parallel.

Row weights (``sample_weight``): :func:`set_row_weights` gives each partition its rows' weights
once (kept apart from EP's state, so that every EP run after it uses them); its prior then
carries them (:class:`~skgpsparse.inference._sparse_prior.SparsePrior`'s ``weights``), and its
sweeps, ADF blocks and evidence terms count each row that many times, as in memory.
"""

from typing import NamedTuple

import numpy as np
from scipy.linalg import LinAlgError

from ..rows._store import read_only, state_scope
from ._ep import _EP_MAX_SWEEPS, _EP_TOL, _MIN_DAMPING, evidence_row_terms
from ._ep_passes import (
    _ADF_ROWS_PER_BASIS,
    PROBIT,
    WeightPosterior,
    _zero_system,
    adf_block,
    block_rows,
    ep_sweep,
    marginal_pass,
    signed,
    system_sums,
    weight_posterior,
)
from ._ep_signed import halved_step, positive_h, recovered_damping, site_change
from ._row_columns import row_slices
from ._sparse_prior import SparsePrior, basis_cholesky

__all__ = ["PartitionedEP", "Targets", "encode_targets", "partitioned_ep", "set_row_weights"]

_KEY = "all_rows_ep"
_WEIGHTS = "row_weights"


@state_scope(_WEIGHTS, resets=True)
def _p_weights(part, weights):
    if weights is None:
        part.state.pop(_WEIGHTS, None)
    else:
        part.state[_WEIGHTS] = weights


def set_row_weights(rows, weights):
    """Give every partition of ``rows`` its rows' entries of ``weights`` (``None``: one each)."""
    offsets = rows.offsets
    rows.map_each(_p_weights, {
        i: (None if weights is None else np.asarray(weights[offsets[i]:offsets[i + 1]]),)
        for i in range(rows.n_partitions)
    })


class Targets(NamedTuple):
    """The partitions' real targets, fitted as ``(y - centre) / scale`` (a regressor's), in
    place of the class label whose rows are ``+1``."""

    centre: float
    scale: float


def encode_targets(y, positive):
    """The targets EP fits: ``+1`` for the rows of class ``positive`` and ``-1`` for the
    others, or ``(y - centre) / scale`` when ``positive`` is a :class:`Targets`."""
    y = np.asarray(y)
    if isinstance(positive, Targets):
        return (y.astype(np.float64) - positive.centre) / positive.scale
    return np.where(y == positive, 1.0, -1.0)


# ---------------------------------------------------------------- on each partition
@state_scope(_KEY, resets=True)
def _p_prior(part, kernel, X_u, L, positive, prior, start_zero):
    X = np.asarray(part.X, dtype=np.float64)
    st = {
        "prior": SparsePrior(kernel, X, X_u, prior, L=L, weights=part.state.get(_WEIGHTS)),
        "y": encode_targets(part.y, positive),
    }
    if start_zero:
        st["tau"], st["nu"] = np.zeros(part.n), np.zeros(part.n)
    part.state[_KEY] = st


def _apply(st, damping):
    """The damped step to the sites the last sweep matched (``damping`` None: no step)."""
    if damping is not None:  # in place: site + damping * (matched - site)
        for key in ("tau", "nu"):
            step = np.subtract(st["new_" + key], st[key])
            step *= damping
            st[key] += step


@state_scope(_KEY)
def _p_system(part, damping):
    st = part.state[_KEY]
    _apply(st, damping)
    return system_sums(st["prior"], st["tau"], st["nu"])


@state_scope(_KEY)
def _p_sweep(part, post, bias, damping, accumulate, apply, likelihood):
    st = part.state[_KEY]
    _apply(st, apply)
    tau, nu = st["tau"], st["nu"]
    if "sweep" not in st:  # the sweeps' per-row outputs, written over by each sweep
        st["sweep"] = tuple(np.empty(part.n) for _ in range(5))
    (mu, s2, _), (new_tau, new_nu), system = ep_sweep(
        st["prior"], st["y"], bias, tau, nu, post, damping, accumulate=accumulate,
        out=st["sweep"], likelihood=likelihood,
    )
    st["mu"], st["s2"], st["new_tau"], st["new_nu"] = mu, s2, new_tau, new_nu
    change = site_change(tau, nu, new_tau, new_nu)
    settled, proper = change, True
    if signed(likelihood):  # all_rows_ep's stopping test, and the step's h = 1 + Lambda tau~
        settled = site_change(tau, nu, new_tau, new_nu, relative=True)
        proper = positive_h(st["prior"], tau + damping * (new_tau - tau))
    return change, settled, system, proper


@read_only
def _p_step_system(part, damping):
    """The system of the step with ``damping`` toward the last sweep's matched sites, the step
    not taken (as :func:`_apply` would take it); None where it leaves an ``h`` not positive."""
    st = part.state[_KEY]
    tau = st["tau"] + damping * (st["new_tau"] - st["tau"])
    if not positive_h(st["prior"], tau):
        return None
    return system_sums(st["prior"], tau, st["nu"] + damping * (st["new_nu"] - st["nu"]))


@state_scope(_KEY)
def _p_marginals(part, post, apply):
    st = part.state[_KEY]
    _apply(st, apply)
    st["mu"], st["s2"], _ = marginal_pass(st["prior"], st["tau"], st["nu"], post)


@state_scope(_KEY)
def _p_adf(part, S, Va, post, rows, n_total, bias, likelihood):
    """Continue the ADF blocks of ``rows`` global rows over this partition's rows."""
    st = part.state[_KEY]
    prior, y = st["prior"], st["y"]
    columns, lam, weights = prior.columns, prior.lam, prior.weights
    tau, nu = np.zeros(part.n), np.zeros(part.n)
    start = 0
    while start < part.n:
        first = part.offset + start
        end = min((first // rows + 1) * rows, n_total)  # the global block's end
        J = slice(start, min(part.n, end - part.offset))
        tau[J], nu[J], S = adf_block(columns.block(J), lam[J], y[J], bias, (S, Va), post,
                                     likelihood, None if weights is None else weights[J])
        if part.offset + J.stop == end:  # the block is complete: it joins the posterior
            post = weight_posterior(S, Va)
        start = J.stop
    st["tau"], st["nu"] = tau, nu
    return S, Va, post


@read_only
def _p_evidence(part, bias, likelihood):
    st = part.state[_KEY]
    total = 0.0
    # blocks of rows: the temporaries of a block
    for J in row_slices(part.n, block_rows(st["prior"].columns.shape[0])):
        weights = st["prior"].weights
        total += evidence_row_terms(
            st["mu"][J], st["s2"][J], st["tau"][J], st["nu"][J], st["prior"].lam[J],
            st["y"][J], bias, likelihood, weights=None if weights is None else weights[J],
        )[0]
    return total


@read_only
def _p_sites(part, local):
    st = part.state[_KEY]
    return st["tau"][local], st["nu"][local]


@state_scope(_KEY, resets=True)
def _p_release(part):
    part.state.pop(_KEY, None)


# ---------------------------------------------------------------- on the driver
class PartitionedEP:
    """EP over every row of a row store under the sparse prior of one kernel and basis.

    Parameters
    ----------
    rows : skgpsparse.rows._store.RowStore
        Training rows and class labels.
    positive : label
        The class whose rows are ``+1`` (the others ``-1``).
    kernel : sklearn.gaussian_process.kernels.Kernel
    X_u : ndarray of shape (p, n_features)
        Basis inputs.
    prior : {"fitc", "dtc"}, default="fitc"
    likelihood : Likelihood, default=Probit()
        ``p(y | f + b)`` (:mod:`skgpsparse.likelihoods`).

    Use as a context manager, or call :meth:`close`, to free the partitions' state.
    """

    def __init__(self, rows, positive, kernel, X_u, prior="fitc", likelihood=PROBIT):
        self.rows, self.positive, self.likelihood = rows, positive, likelihood
        self.X_u = np.asarray(X_u, dtype=np.float64)
        self.L = basis_cholesky(kernel, self.X_u)
        self.kernel, self.prior = kernel, prior

    def run(self, bias, start="adf", *, tol=_EP_TOL, max_sweeps=_EP_MAX_SWEEPS, adf_rows=None):
        """EP from ``start`` (``"adf"``, or ``"zero"`` sites) to ``tol``, as
        :func:`~skgpsparse.inference._ep.all_rows_ep`; returns
        ``(-log Z, WeightPosterior, converged)``.

        ``adf_rows``: rows per ADF block (:func:`~skgpsparse.inference._ep_passes.adf_sites`'s
        ``rows``).
        """
        rows = self.rows
        rows.map(_p_prior, self.kernel, self.X_u, self.L, self.positive, self.prior,
                 start == "zero")
        p = self.X_u.shape[0]
        if start == "adf":
            S, Va = _zero_system(p)
            post = WeightPosterior(np.eye(p), np.zeros(p), np.zeros(p))
            block = adf_rows or max(block_rows(p), _ADF_ROWS_PER_BASIS * p)
            for i in range(rows.n_partitions):  # in row order: each continues the last
                S, Va, post = rows.map_each(
                    _p_adf, {i: (S, Va, post, block, rows.n, bias, self.likelihood)}
                )[0]
        else:
            post = weight_posterior(*rows.sum(_p_system, None))
        damping, last_change, previous_change = 1.0, np.inf, np.inf
        apply, converged = None, False
        negative = signed(self.likelihood)
        for _ in range(max_sweeps):
            expect_last = np.isfinite(previous_change) and (
                last_change * min(last_change / previous_change, 1.0) < 0.5 * tol
            )
            results = rows.map(
                _p_sweep, post, bias, damping, not expect_last, apply, self.likelihood
            )
            change = max(r[0] for r in results)
            if max(r[1] for r in results) < tol:
                converged = True
                break
            next_system = None if expect_last else _add_systems([r[2] for r in results])
            if change > last_change:  # oscillation: damp more (all_rows_ep's rule)
                damping = max(0.5 * damping, _MIN_DAMPING)
                next_system = None
            previous_change, last_change = last_change, change
            if negative:  # all_rows_ep's proper step and damping growth (_ep_signed)
                if not all(r[3] for r in results):
                    next_system = None
                next_post, damping = self._proper_step(next_system, damping)
                if next_post is None:  # no proper step: the sites stay, as in memory
                    apply = None
                    break
                post, apply = next_post, damping
                damping = recovered_damping(damping, change, previous_change)
                continue
            apply = damping
            if next_system is None:
                next_system, apply = rows.sum(_p_system, apply), None
            post = weight_posterior(*next_system)
        else:
            rows.map(_p_marginals, post, apply)
        log_z = (-np.sum(np.log(np.diag(post.L_B))) + 0.5 * post.Ua @ post.Ua
                 + rows.sum(_p_evidence, bias, self.likelihood))
        return float(-log_z), post, converged

    def _proper_step(self, sums, damping):
        """``(posterior, damping)`` of the step toward the last sweep's matched sites with
        the damping halved until the posterior is proper (:func:`~._ep_signed.proper_step`);
        ``sums``: the step's system at ``damping`` if the sweep formed it. The posterior is
        None if no step was proper."""
        def proper_at(step, first):
            formed = sums if first else None
            if formed is None:
                parts = self.rows.map(_p_step_system, step)
                if any(part is None for part in parts):
                    return None
                formed = _add_systems(parts)
            try:
                return weight_posterior(*formed)
            except (LinAlgError, ValueError):
                return None

        return halved_step(proper_at, damping)

    def sites(self):
        """``(tau~, nu~)`` of every row, gathered from the partitions (``2 n`` numbers)."""
        return self.rows.gather(_p_sites, np.arange(self.rows.n))

    def close(self):
        self.rows.map(_p_release)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _add_systems(systems):
    S, Va = systems[0][0].copy(order="F"), systems[0][1].copy()
    for S_i, Va_i in systems[1:]:
        S += S_i
        Va += Va_i
    return S, Va


def partitioned_ep(rows, positive, kernel, X_u, bias, start="adf", prior="fitc",
                   likelihood=PROBIT):
    """``(-log Z, posterior, L, (tau~, nu~))`` of EP over every row of ``rows``
    (:class:`PartitionedEP`); the partitions' state is freed after."""
    with PartitionedEP(rows, positive, kernel, X_u, prior, likelihood) as ep:
        value, post, _ = ep.run(bias, start)
        return value, post, ep.L, ep.sites()
