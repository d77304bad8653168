"""The IVM's outer loop (``hyperparameter_objective="evidence"``): rounds of selection and
the EP evidence of the basis labels (:mod:`skgpsparse.latent.objectives._basis_evidence`).

The bias is learned with the kernel. Each selection favours the points the model gets wrong,
so a round can produce a basis of mostly one class, whose evidence is maximised by ``b -> +-inf``
(and the next basis then comes from the other class). Two guards: ``b`` has a Gaussian prior
``N(b_0, 1 + mean k(x, x))`` (``b_0`` the class-balance start, unit scale in probit units of the
prior predictive; the IVM software likewise offers a unit Gaussian prior on its noise
parameters), so the objective is ``-log Z_EP + (b - b_0)^2 / (2 s_b^2)``; and the outer loop
keeps, among the models it visits (each a basis selected under its own ``(theta, b)``), the one
with the highest training log-likelihood of ALL labels, ``-n NLP_a`` (additive-model paper
eq. (5)), the IVM's own model log-likelihood (its noise-model objective over the training set).
"""

import time
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from ..objectives._basis_evidence import EvidenceObjective
from ._hyperparameters import BIAS_BOUNDS, PATIENCE, check_bounds, initial_bias, minimize_theta

__all__ = ["fit_evidence"]


def fit_evidence(model, X, y, rng):
    """The IVM outer loop of ``LatentSparseGP.fit`` for ``"evidence"``.

    Rounds of: basis selection under ``(theta, b)``; ``(theta, b)`` by the EP evidence of the
    basis labels and the prior of ``b``. Keeps the visited model (basis, sites and the
    ``(theta, b)`` it was selected under) with the lowest training NLP_a; stops after
    ``max_iter`` rounds or when that has not improved by ``tol`` for ``PATIENCE`` rounds.
    """

    kernel = clone(model.kernel)
    bias = initial_bias(kernel, X, y, model.likelihood)
    # prior of b: N(b_0, 1 + mean k(x, x)) under the initial kernel (module docstring)
    bias_prior = (bias, float(np.sqrt(1.0 + np.mean(kernel.diag(X)))))
    bias += model.bias_offset  # a restart's start (the prior stays at b_0)
    model.loss_curve_ = []
    best, since_best, rounds = None, 0, 0
    for it in range(model.max_iter + 1):
        tic = time.perf_counter()
        state = model._select(kernel, X, y, bias, rng)
        basis = state.basis_indices.copy()
        prec = state.site_precision[: state.size].copy()
        mean = state.site_mean[: state.size].copy()
        nlp_all = state.nlp(all_points=True)
        if best is None or nlp_all < best[0] - model.tol:
            since_best = 0
        else:
            since_best += 1
        if best is None or nlp_all < best[0]:
            best = (nlp_all, kernel, bias, basis, prec, mean, model._last_exchange_curve)
        objective = EvidenceObjective(kernel, X[basis], y[basis], prec, mean, bias_prior,
                                       model.likelihood)
        theta0 = np.append(kernel.theta, bias)
        if model.optimizer is None:
            model.loss_curve_.append(float(objective(theta0, eval_gradient=False)))
            break
        if it == model.max_iter or since_best >= PATIENCE:
            model._progress.line(f"final selection  NLP_a {nlp_all:.6f}")
            break  # the last selection is a candidate model, not followed by an optimisation
        bounds = np.vstack([kernel.bounds.reshape(-1, 2), BIAS_BOUNDS])
        theta, loss = minimize_theta(
            model.optimizer, model._progress.counting("hyperparameters", objective), theta0, bounds
        )
        kernel, bias = kernel.clone_with_theta(theta[:-1]), float(theta[-1])
        model.loss_curve_.append(loss)
        rounds += 1
        model._progress.line(
            f"iter {it + 1:3d}  NLP_a {nlp_all:.6f}  -logZ+prior {loss:.6f}"
            f"  basis {state.size}  b {bias:+.4f}  kernel {kernel}"
            f"  ({time.perf_counter() - tic:.2f} s)"
        )
    model.n_iter_ = max(rounds, 1)
    _, model.kernel_, model.bias_, model.basis_indices_, prec, mean, curve = best
    if model.optimizer is not None:
        check_bounds(model, model.kernel_)
        if abs(model.bias_) >= BIAS_BOUNDS[1]:
            warnings.warn(
                f"The learned bias b = {model.bias_:+g} is at its bound {BIAS_BOUNDS}: the "
                "evidence of the basis labels is explained by the bias alone.",
                ConvergenceWarning,
                stacklevel=4,
            )
    model.exchange_loss_curve_ = [float(v) for v in curve]
    model.site_precision_, model.site_mean_ = prec, mean
    model._set_fitted_basis(X, y)
    return model
