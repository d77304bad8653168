"""Keeping EP's posterior proper when site precisions may be negative.

For a likelihood that is not log-concave (the Student-t) EP's moment matching gives negative
site precisions for the rows the likelihood discounts (outliers), and EP over all rows keeps them
(:func:`~skgpsparse.inference._ep_passes.signed_sites`; Jylanki, Vanhatalo and Vehtari 2011,
"Robust Gaussian process regression with a Student-t likelihood", JMLR 12, §4). The row guards
keep each cavity proper, but the posterior of ``w``, ``N(B^-1 V a, B^-1)`` with
``B = I + V G V^T`` (:mod:`skgpsparse.inference._ep_passes`), is proper only while ``B`` is
positive definite and every ``h_i = 1 + Lambda_i tau~_i`` positive. A parallel update that would
break either takes a shorter step toward the matched sites: the damping halves until the
posterior is proper (their §4.1 damps the parallel updates for the same reason). Zero sites
give ``B = I``, so a small enough step from proper sites always exists.
"""

import numpy as np
from scipy.linalg import LinAlgError

from ._ep_passes import system, weight_posterior

__all__ = ["proper_step", "proper_system", "signed_start"]

# Halvings of the damping tried before a step is given up (the sites then stay).
_HALVINGS = 30


def proper_system(prior, tau, nu, sums=None):
    """The posterior of ``w`` under ``(tau~, nu~)`` if it is proper, else None.

    ``sums``: ``(B - I, V a)`` of these sites when already formed (the sweep's).
    """
    if not np.all(np.isfinite(tau)) or np.any(1.0 + prior.lam * tau <= 0.0):
        return None
    try:
        return system(prior, tau, nu) if sums is None else weight_posterior(*sums)
    except (LinAlgError, ValueError):
        return None


def signed_start(prior, tau, nu):
    """Warm-start sites and their posterior: as given when proper, else with the negative
    precisions set to 0 (positive sites alone keep ``B`` positive definite)."""
    tau = np.asarray(tau, dtype=float)
    nu = np.asarray(nu, dtype=float)
    post = proper_system(prior, tau, nu)
    if post is None:
        nu = np.where(tau < 0.0, 0.0, nu)
        tau = np.maximum(tau, 0.0)
        post = system(prior, tau, nu)
    return tau, nu, post


def proper_step(prior, tau, nu, new_tau, new_nu, damping, sums=None):
    """The damped step from ``(tau, nu)`` toward ``(new_tau, new_nu)``, its damping halved
    until the posterior is proper (module docstring).

    ``sums``: the system of the step with ``damping`` when the sweep formed it.

    Returns
    -------
    tau, nu : ndarray
        The next sites (the current ones if no step was proper).
    post : WeightPosterior or None
        Their posterior (None if no step was proper).
    damping : float
        The damping that was taken (kept for the next sweeps).
    """
    for _ in range(_HALVINGS):
        step_tau = tau + damping * (new_tau - tau)
        step_nu = nu + damping * (new_nu - nu)
        post = proper_system(prior, step_tau, step_nu, sums)
        if post is not None:
            return step_tau, step_nu, post, damping
        damping, sums = 0.5 * damping, None
    return tau, nu, None, damping
