"""A class's own kernel in the shared fit, where its evidence pays for it.

The shared fit (:mod:`skgpsparse.classification.multiclass._shared_learning`) learns one kernel
on the ``K`` classes' summed evidence, on a small basis (``learn_basis_size``). Where one class's
boundary needs other length scales than the rest, or the length scales of a larger basis, the
shared kernel is the limit: on pmlb connect-4 the independent fits, each with its own kernel,
reached test NLP 0.67-0.82 against the shared fit's 0.77-0.83.

So each class, once its basis is selected under the shared kernel, runs the binary fit's
per-feature trial from there (:func:`class_kernel`): its own kernel (one length scale per feature
where the kernel has a scalar one,
:func:`~skgpsparse.kernels._scales.per_feature_length_scales`; the shared kernel's form
otherwise) and its own bias are learned on that basis, starting at the shared ones (one L-BFGS-B
run, boxed as a round after the first, :func:`~skgpsparse.latent.learning._ep_rounds._learn`),
and kept only if the class's log evidence rises by more than the trial's charge for the class's
``n_theta`` own hyperparameters,
:data:`~skgpsparse.latent.learning._ep_rounds.CHARGE_FACTOR` times the BIC's ``n_theta / 2 log
n`` on the ``n`` training rows (the gain is ``n`` times the rise per row). The run learns on the
selection rows, at most :data:`TRIAL_ROWS` of them (evenly spaced: no random draw), and stops
early when :class:`~skgpsparse.latent.learning._charge_bound.ChargeBound` says that it cannot
pay. On a basis of more than :data:`SCREEN_BASIS` vectors it runs first on the first of them,
and goes on to the whole basis (from the kernel learned there) only if that gains more than
:data:`SCREEN_SHARE` of the charge. A class that keeps its own kernel selects its basis again
under it (the same size) and runs EP under it; the others keep the shared kernel and bias, and
their models are those of the fit without the trial. A kernel whose hyperparameters are all
fixed has none of its own to learn: no trial.
"""

import numpy as np
from sklearn.base import clone

from ..._row_weights import total_weight
from ...kernels._scales import bic_charge, per_feature_length_scales
from ...latent._model import LatentSparseGP
from ...latent.learning._charge_bound import ChargeStop
from ...latent.learning._ep_rounds import CHARGE_FACTOR, _learn
from ...latent.learning._hyperparameters import OPTIMIZER_MAXITER
from ...latent.objectives._ep_evidence import AllRowsObjective, joint_theta
from ...latent.objectives._hyperprior import with_length_scale_prior

__all__ = ["SCREEN_BASIS", "SCREEN_SHARE", "TRIAL_ROWS", "class_kernel", "trial_rows"]

# The most rows a class's trial learns on (each of its evaluations is an EP run over them at the
# class's basis). Session 31 (benchmarks/studies/results/multiclass_combination.md): on all 2,000
# selection rows of pmlb connect-4 the trial kept its own kernel for two classes of three (test
# NLP 0.676 against 0.770); on the shared learning's 1,000 rows, for none. Above it the trial's
# cost stays that of TRIAL_ROWS rows (synthetic, 10^5 rows, 3 classes: 1.5x the fit's CPU).
TRIAL_ROWS = 5000
# A basis of more than SCREEN_BASIS vectors is first tried on its first SCREEN_BASIS (the
# earliest selected), and the trial goes on to the whole basis only if that gains more than
# SCREEN_SHARE of the charge. Session 31: on splice (bases of 400-800, 61 hyperparameters, no
# class paying: gains 26-49 nats against 116) the fit took 59 s with the whole-basis trial and
# 21 s screened (16 s without a trial); connect-4's two classes that pay gained 60 and 130
# nats on 200 vectors (charge 82), 127 and 159 on their 800.
SCREEN_BASIS = 200
SCREEN_SHARE = 0.5


def trial_rows(n):
    """Positions of the rows (of ``n`` selection rows) a class's trial learns on: all, or
    :data:`TRIAL_ROWS` evenly spaced.

    Examples
    --------
    >>> from skgpsparse.classification.multiclass._class_kernels import trial_rows
    >>> trial_rows(3), trial_rows(20_000)[:3], trial_rows(20_000).size
    (array([0, 1, 2]), array([0, 4, 8]), 5000)
    """
    if n <= TRIAL_ROWS:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, TRIAL_ROWS).round().astype(np.intp))


def class_kernel(params, kernel, bias, X, y, X_u, n, weights=None):
    """A class's kernel and bias: its own if its trial pays the charge (module docstring), else
    ``kernel`` and ``bias`` (the shared ones).

    Parameters
    ----------
    params : dict
        Arguments of ``LatentSparseGP`` (``posterior="all_rows"``).
    kernel : Kernel
        The shared kernel.
    bias : float
        The class's bias under it.
    X : ndarray of shape (m, n_features)
        The rows the trial learns on (:func:`trial_rows`).
    y : ndarray of shape (m,)
        Their labels in {-1, +1} (the class against the rest).
    X_u : ndarray of shape (p, n_features)
        The class's basis inputs.
    n : float
        The training rows (their summed weights) the charge and the gain are for.
    weights : ndarray of shape (m,), default=None
        The rows' weights.

    Returns
    -------
    kernel : Kernel
    bias : float
    own : bool
        Whether the class keeps its own kernel.
    line : str
        The decision, for ``verbose``.
    """
    candidate = per_feature_length_scales(kernel, X.shape[1])
    candidate = clone(kernel) if candidate is None else candidate
    if candidate.n_dims == 0:  # every hyperparameter fixed: no kernel of its own to learn
        return kernel, float(bias), False, ""
    charge = CHARGE_FACTOR * bic_charge(candidate.n_dims, n)
    if len(X_u) > SCREEN_BASIS:  # first on the basis's first SCREEN_BASIS vectors
        gain, own, own_bias, stopped = _trial(params, kernel, bias, candidate, X, y,
                                              X_u[:SCREEN_BASIS], n, charge, weights)
        if gain <= SCREEN_SHARE * charge:
            return kernel, float(bias), False, (
                f"own kernel not kept (on its first {SCREEN_BASIS} basis vectors: log "
                f"evidence and prior {gain:+.2f} nats, charge {charge:.2f})")
        candidate, bias_start = own, own_bias
    else:
        bias_start = bias
    gain, own, own_bias, stopped = _trial(params, kernel, bias, candidate, X, y, X_u, n,
                                          charge, weights, bias_start)
    keep = bool(gain > charge)
    line = (f"own kernel {'kept' if keep else 'not kept'} (log evidence and prior "
            f"{gain:+.2f} nats, charge {charge:.2f}"
            f"{', its run stopped early' if stopped else ''})")
    if keep:
        return own, float(own_bias), True, line
    return kernel, float(bias), False, line


def _trial(params, kernel, bias, candidate, X, y, X_u, n, charge, weights, start_bias=None):
    """One trial run on the basis ``X_u``: ``candidate`` and the bias (from ``start_bias``,
    ``bias`` by default) learned by the class's evidence; ``(gain over the shared kernel and
    bias in nats, the learned kernel, bias, whether the run stopped early)``."""
    learner = LatentSparseGP(**dict(params, max_basis=len(X_u)))
    learner._row_weights = weights
    objective = AllRowsObjective(kernel, X, y, X_u, (None, None), likelihood=learner.likelihood,
                                 weights=weights)  # EP from one ADF pass
    start = float(with_length_scale_prior(objective, kernel, total_weight(y.size, weights))(
        joint_theta(kernel, learner.likelihood, bias), eval_gradient=False))
    stop = ChargeStop(start, charge / n, OPTIMIZER_MAXITER)
    learner.loss_curve_ = [start]  # a learned start: the run is boxed (_ep_rounds._learn)
    start_bias = bias if start_bias is None else start_bias
    loss, own, own_bias, _ = _learn(learner, candidate, start_bias, objective.sites, X, y, None,
                                    stop=stop, X_u=X_u)
    return n * (start - loss), own, own_bias, stop.stopped
