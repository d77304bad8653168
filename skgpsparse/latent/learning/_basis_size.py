"""``max_basis="auto"`` under the all-rows posterior: the basis size the EP evidence asks for.

The fit first runs as with ``max_basis`` at the stand-in size (100, today's default): its
rounds of selection and learning (:mod:`._ep_rounds`) and the choice of one length scale per
feature. At the kept ``(theta, b)`` and kernel the basis is then grown afresh by the model's
own selection (the entropy criterion by default) in doublings from the stand-in size
(``100, 200, 400, ...``), and after each doubling EP over every (learning) row gives its log
evidence per row under the FITC prior of that basis
(:class:`~skgpsparse.latent.objectives._ep_evidence.AllRowsObjective`, GPML eq. (3.65)), each
EP run started from the sites of the last (they belong to rows, not to the basis). The size
kept is the last one before the first doubling that raises it by less than ``GAIN_PER_ROW``
nats per row: the next doubling would cost about four times the fit's ``O(n p^2)`` work for
less. At the stand-in size the fit is kept as it is (its cost is paid); at a larger one the
rounds run again at that size from the kept ``(theta, b)`` (:func:`grown_rounds`). With fixed
hyperparameters the curve is taken at the kernel given.

Why after the whole fit at the stand-in size, not after its first round: there the kernel is
not yet the data's (one length scale where the data need one per feature, an amplitude not
yet learned), and the evidence keeps rising with the basis where the fitted model gains
nothing. Synthetic rows (20 features, 4 of them used, 10,000 rows): after the first round the
evidence gained 0.058, 0.065, 0.049, 0.013 nats per row up to 800 (the size chosen: 800, at
15-17 times the CPU of ``max_basis=100`` for a slightly worse test NLP); after the whole fit at
100 it gains 0.00006 from 100 to 200 (``benchmarks/studies/results/basis_size_loo.md``). The
cap (:func:`~skgpsparse._auto_basis.basis_cap`) is :func:`~skgpsparse._auto_basis.row_cap` of
the rows and the largest basis whose fit fits in the memory available.
"""

import numpy as np

from ..._auto_basis import FIRST_SIZE, doubling_sizes, row_cap
from ...inference._adf import ADFState
from ..objectives._ep_evidence import AllRowsObjective, joint_theta

__all__ = ["GAIN_PER_ROW", "choose_basis_size", "grown_rounds", "has_doubling"]

#: Per-row gain (nats) of the EP log evidence below which a doubling does not pay.
GAIN_PER_ROW = 0.001
#: EP's tolerance on the sites for the curve (the learning's search tolerance): the evidence is
#: stationary in the sites, so its error is second order in theirs, far below ``GAIN_PER_ROW``.
CURVE_TOL = 1e-3


def has_doubling(cap, start, n):
    """Whether ``"auto"`` has a size above ``start`` to try on ``n`` rows under ``cap``
    (:func:`~skgpsparse._auto_basis.row_cap` of the rows too): without one the curve is not
    computed and the fit at ``start`` is kept (``basis_size_curve_`` None).

    Examples
    --------
    >>> has_doubling(800, 100, 150), has_doubling(800, 100, 400), has_doubling(100, 100, 10**5)
    (False, True, False)
    """
    return min(cap, row_cap(n)) > start


def grown_rounds(model, best, X, y, rng, rounds):
    """The kept round of ``model`` with ``max_basis="auto"`` and the rounds run for it:
    ``(kept round, rounds run)``.

    ``best`` is the kept round of the fit at the stand-in size (``model.max_basis``);
    :func:`choose_basis_size` chooses the size at its ``(theta, b)`` and kernel from the
    stand-in size up. At the stand-in size ``best`` is kept (no round runs); at a larger one
    ``rounds`` (:func:`~._ep_rounds._rounds`) run at that size from ``best``'s ``(theta, b)``
    and sites (at most ``max_iter``) and their best round is kept. Without a size above the
    stand-in's to try ``best`` is kept and there is no curve.
    """
    _, kernel, bias, _, sites, _, likelihood = best
    model._warm_basis = None  # a warm start's basis started the stand-in's rounds
    model.likelihood = likelihood
    size, model.basis_size_curve_ = choose_basis_size(
        model, kernel, X, y, bias, rng, model.basis_cap, sites, start=model.max_basis)
    if size <= model.max_basis:
        return best, 0
    model.max_basis = size
    return rounds(model, kernel, bias, sites, X, y, rng, model.max_iter)


def choose_basis_size(model, kernel, X, y, bias, rng, cap, sites=(None, None),
                      start=FIRST_SIZE):
    """The basis size of ``model`` on the rows ``X, y`` at ``(kernel, bias)`` (module docstring).

    Parameters
    ----------
    model : LatentSparseGP
        Its selector, likelihood, row weights and progress lines are used.
    kernel : Kernel
        The starting kernel.
    X : ndarray of shape (n, n_features)
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    bias : float
        The starting bias.
    rng : numpy.random.RandomState
        The selector's draws (none for the entropy criterion).
    cap : int
        The largest size tried (:func:`~skgpsparse._auto_basis.basis_cap`).
    sites : pair of ndarray or None
        EP's start (None: one ADF pass).
    start : int, default=FIRST_SIZE
        The first size of the curve (the smallest kept). Without a size above it to try
        (:func:`has_doubling`) it is the size, and there is no curve.

    Returns
    -------
    size : int
        The size kept.
    curve : ndarray of shape (k, 2) or None
        Each size reached and the EP log evidence per row there.
    """
    if not has_doubling(cap, start, y.size):  # no size above start to try: no curve
        return start, None
    cap = min(cap, row_cap(y.size))  # a learning subsample's, a pair's rows
    state = ADFState(kernel, X, y, bias, cap, likelihood=model.likelihood,
                     site_update=model.site_update, n_threads=model.n_threads)
    model._twins_of(X)
    curve = []
    z = joint_theta(kernel, model.likelihood, bias)
    for size in doubling_sizes(start, cap):
        while state.size < size and state.candidates().size:
            model._add(state, model.selector.select(state, rng))
            model._progress.step(
                lambda size=size: f"max_basis='auto': basis {state.size}/{size}")
        objective = AllRowsObjective(kernel, X, y, X[state.basis_indices], sites,
                                     tol=CURVE_TOL, likelihood=model.likelihood,
                                     weights=model._row_weights)
        value = -float(objective(z, eval_gradient=False))
        sites = objective.sites
        gain = value - curve[-1][1] if curve else np.inf
        curve.append((state.size, value))
        model._progress.line(
            f"max_basis='auto': basis {state.size}, EP log evidence per row {value:.5f}"
            + ("" if len(curve) == 1 else f", gain {gain:.5f}")
        )
        if gain < GAIN_PER_ROW:
            return curve[-2][0], np.asarray(curve)
        if state.size < size:  # no candidate left
            break
    return curve[-1][0], np.asarray(curve)
