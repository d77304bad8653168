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

The halving can cut the damping far below what the parallel updates need to settle, and EP's
oscillation rule only ever lowers it, so after a sweep whose largest site change fell the
damping grows back toward 1 (:func:`recovered_damping`). Jylanki et al. damp by 0.5
throughout; EP here starts undamped. On pol (8,000 rows, 10 % gross target errors, the
Student-t fit's final EP from ADF) the first step was halved to 0.0156, the damping then sat at
the floor 0.05 and EP had not converged after 400 sweeps; with the growth it reached the same
fixed point (the evidence equal to 1e-10) in 18 sweeps, and KIN40K's in 3-6 instead of 29-37.

A learned Student-t scale ``s`` can fall far below the latent noise (FITC's ``Lambda`` carries
it), and its sites' precision reaches ``(nu + 1) / (nu s^2)``: 4e5 on pol's clean targets, where
``s`` = 0.0013. Their rounding then moves them by ~1e-5 a sweep, so EP's stopping test
(:func:`site_change`) takes the change relative to the site's size where ``|tau~| > 1``: on
that fit the sites were settled to 4e-10 relative after 4 sweeps, and the absolute test ran the
remaining 196 of the 200 allowed. The damping rules keep the absolute change: the relative one
jumps between rows whose small precision flips sign, and on pol's corrupted targets it halved
and grew the damping in turn for 63 sweeps where the absolute one took 18.
"""

import numpy as np
from scipy.linalg import LinAlgError

from ._ep_passes import system, weight_posterior

__all__ = [
    "halved_step",
    "positive_h",
    "proper_step",
    "proper_system",
    "recovered_damping",
    "signed_start",
    "site_change",
]

# Halvings of the damping tried before a step is given up (the sites then stay).
_HALVINGS = 30
# The damping's growth after a sweep whose largest change fell.
_RECOVERY = 1.5


def site_change(tau, nu, new_tau, new_nu, relative=False):
    """The largest change of a site parameter from ``(tau, nu)`` to ``(new_tau, new_nu)``.

    With ``relative`` (the stopping test of signed sites, module docstring), where ``|tau~|``
    exceeds 1: ``tau~``'s change over ``|tau~|``, and ``nu~``'s over ``|tau~|^1/2``, which
    for ``nu~ = tau~ mu~`` is the site mean's change in units of the site's standard deviation
    (``nu~`` over ``|nu~|`` let the site means move by a standard deviation at EP's search
    tolerance 1e-3, and the basis refinement stalled on pol).
    """
    d_tau, d_nu = np.abs(new_tau - tau), np.abs(new_nu - nu)
    if relative:
        size = np.maximum(np.abs(tau), 1.0)
        d_tau /= size
        d_nu /= np.sqrt(size)
    return max(np.max(d_tau, initial=0.0), np.max(d_nu, initial=0.0), 0.0)


def recovered_damping(damping, change, previous_change):
    """The damping of the next sweep after a step with ``damping`` (module docstring): times
    ``_RECOVERY``, at most 1, where the sweep's largest site change fell below the last one."""
    return min(_RECOVERY * damping, 1.0) if change < previous_change else damping


def positive_h(prior, tau):
    """Whether the precisions ``tau~`` are finite and keep every ``h_i = 1 + Lambda_i tau~_i``
    positive (module docstring)."""
    return bool(np.all(np.isfinite(tau)) and np.all(1.0 + prior.lam * tau > 0.0))


def halved_step(proper_at, damping):
    """``(posterior, damping)``: the first of ``damping``, ``damping / 2``, ... (at most
    :data:`_HALVINGS` of them) at which ``proper_at(damping, first)`` returns a posterior
    (``first``: the damping it was given, whose system the sweep may have formed); the
    posterior is None if none did. The in-memory step (:func:`proper_step`) and the
    partitions' (:mod:`skgpsparse.inference._ep_partitioned`) share it."""
    for k in range(_HALVINGS):
        post = proper_at(damping, k == 0)
        if post is not None:
            return post, damping
        damping *= 0.5
    return None, damping


def proper_system(prior, tau, nu, sums=None):
    """The posterior of ``w`` under ``(tau~, nu~)`` if it is proper, else None.

    ``sums``: ``(B - I, V a)`` of these sites when already formed (the sweep's).
    """
    if not positive_h(prior, tau):
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
    def proper_at(step, first):
        return proper_system(prior, tau + step * (new_tau - tau), nu + step * (new_nu - nu),
                             sums if first else None)

    post, damping = halved_step(proper_at, damping)
    if post is None:
        return tau, nu, None, damping
    return tau + damping * (new_tau - tau), nu + damping * (new_nu - nu), post, damping
