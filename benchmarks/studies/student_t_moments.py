"""Student-t tilted moments: CPU per 10^5 rows and accuracy against adaptive quadrature in f.

Accuracy: for every ``dof`` in {1, 2, 4, 10, 30, 100}, cavity variance ``v / s^2`` in
{1e-6, 1e-4, 1e-2, 0.1, 1, 10, 1e3} and residual ``(y - m) / s`` in {0, 0.1, 0.5, 1, 2, 3, 5,
10, 20, 50}, ``log Z``, ``d1 = d log Z / dm``, ``d2 = d log Z / dv`` and (where the tree has
them) ``d log Z / d log s``, ``d log Z / d log nu`` against ``scipy.integrate.quad`` in ``f``
(relative tolerance 1e-13): ``Z = int p N``, ``dZ/dm = int p' N``, ``dZ/dv = int p'' N / 2``
(the heat equation of the Gaussian), and the parameter derivatives as tilted expectations of
``d log p / d theta``; none of these uses the package's rules. Errors: ``log Z`` absolute,
the others relative with a floor of 1e-6 of their natural unit (``1 / (v + s^2)^1/2``,
``1 / (v + s^2)``, 1) where the value crosses zero.

Speed: ``tilted`` on 10^5 rows, process time, median of 5 repeats, one BLAS thread, for two
row mixes: ``ep`` (cavity variances log-uniform in [1e-4, 1] s^2, residuals Student-t noise
with 10 % outliers uniform in 5..50 s) and ``grid`` (variances log-uniform in [1e-6, 1e3] s^2,
residuals uniform in [0, 50] s).

Usage (``--label`` names the tree in the output; run once per tree, the older one from a
checkout of its commit on ``PYTHONPATH``; the parameter columns need ``parameter_gradient``)::

    python benchmarks/studies/student_t_moments.py --label after
    PYTHONPATH=/tmp/old python benchmarks/studies/student_t_moments.py --label before

``benchmarks/studies/results/student_t_moments.md`` holds the last run of both.
"""

import argparse
import datetime
import os
import platform
import time
import warnings

import numpy as np
from scipy import integrate
from scipy.special import digamma, gammaln

from skgpsparse.likelihoods import StudentT

DOFS = (1.0, 2.0, 4.0, 10.0, 30.0, 100.0)
VARS = (1e-6, 1e-4, 1e-2, 0.1, 1.0, 10.0, 1e3)
RESIDUALS = (0.0, 0.1, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0)


def reference(r, v, dof, scale):
    """``[log Z, d1, d2, d log Z / d log s, d log Z / d log nu]`` by quad in ``f`` (m = 0)."""
    nu, c = dof, dof * scale**2
    sd = np.sqrt(v)
    lo, hi = -40.0 * sd, 40.0 * sd
    const = gammaln(0.5 * (nu + 1)) - gammaln(0.5 * nu) - 0.5 * np.log(np.pi * c)

    def log_p(f):
        return const - 0.5 * (nu + 1) * np.log1p((r - f) ** 2 / c)

    def log_n(f):
        return -0.5 * np.log(2 * np.pi * v) - 0.5 * f * f / v

    f_y = min(max(r, lo), hi)
    top = max(log_p(0.0) + log_n(0.0), log_p(f_y) + log_n(f_y))

    def base(f):
        return np.exp(log_p(f) + log_n(f) - top)

    def g1(f):  # d log p / df
        z = r - f
        return (nu + 1) * z / (c + z * z)

    def g2(f):  # d^2 log p / df^2
        z = r - f
        return -(nu + 1) * (c - z * z) / (c + z * z) ** 2

    def g_scale(f):  # d log p / d log s
        z2 = (r - f) ** 2
        return -1.0 + (nu + 1) * z2 / (c + z2)

    def g_dof(f):  # d log p / d log nu
        z2 = (r - f) ** 2
        return nu * (0.5 * digamma(0.5 * (nu + 1)) - 0.5 * digamma(0.5 * nu) - 0.5 / nu
                     - 0.5 * np.log1p(z2 / c) + 0.5 * (nu + 1) * z2 / (nu * (c + z2)))

    points = sorted({0.0, f_y, min(max(r - scale, lo), hi), min(max(r + scale, lo), hi),
                     -sd, sd, -5 * sd, 5 * sd})
    points = [p for p in points if lo < p < hi]

    def quad(fn):  # quad's roundoff warning at epsrel 1e-13 is expected
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        return integrate.quad(fn, lo, hi, points=points, epsabs=0.0, epsrel=1e-13,
                              limit=4000)[0]

    z0 = quad(base)
    return np.array([np.log(z0) + top, quad(lambda f: base(f) * g1(f)) / z0,
                     0.5 * quad(lambda f: base(f) * (g1(f) ** 2 + g2(f))) / z0,
                     quad(lambda f: base(f) * g_scale(f)) / z0,
                     quad(lambda f: base(f) * g_dof(f)) / z0])


def accuracy(scale=0.7):
    """Largest error per (dof, v / s^2) cell over the residuals; rows of a markdown table."""
    has_gradient = hasattr(StudentT(), "parameter_gradient")
    lines = ["| dof | v / s^2 | log Z (abs) | d1 (rel) | d2 (rel) | dlogZ/dlog s | dlogZ/dlog nu |",
             "|---|---|---|---|---|---|---|"]
    worst = np.zeros(5)
    for dof in DOFS:
        for v_rel in VARS:
            v = v_rel * scale**2
            r = np.array(RESIDUALS) * scale
            want = np.array([reference(ri, v, dof, scale) for ri in r]).T
            lik = StudentT(dof, scale)
            got = list(lik.tilted(r, np.zeros_like(r), np.full_like(r, v)))
            if has_gradient:
                grad = lik.parameter_gradient(r, np.zeros_like(r), np.full_like(r, v))
                got += [grad[:, 0], grad[:, 1]]
            units = [None, 1 / np.sqrt(v + scale**2), 1 / (v + scale**2), 1.0, 1.0]
            cells = []
            for k, g in enumerate(got):
                err = np.abs(g - want[k])
                if units[k] is not None:
                    err = err / np.maximum(np.abs(want[k]), 1e-6 * units[k])
                worst[k] = max(worst[k], err.max())
                cells.append(f"{err.max():.1e}")
            cells += ["-"] * (5 - len(cells))
            lines.append(f"| {dof:g} | {v_rel:g} | " + " | ".join(cells) + " |")
    lines.append("| all | all | " + " | ".join(f"**{w:.1e}**" for w in worst[:5]) + " |")
    return lines


def rows(mix, n, rng):
    """Residuals and variances (scale 1) of one row mix (module docstring)."""
    if mix == "ep":
        var = np.exp(rng.uniform(np.log(1e-4), np.log(1.0), n))
        r = rng.standard_t(4.0, n)
        out = rng.random(n) < 0.1
        r[out] = rng.choice([-1.0, 1.0], out.sum()) * rng.uniform(5.0, 50.0, out.sum())
    else:
        var = np.exp(rng.uniform(np.log(1e-6), np.log(1e3), n))
        r = rng.uniform(0.0, 50.0, n)
    return r, var


def speed(n=100_000, repeats=5):
    """Median CPU seconds of ``tilted`` on ``n`` rows per (mix, dof)."""
    lines = ["| mix | dof | CPU s per 10^5 rows (median of %d) |" % repeats, "|---|---|---|"]
    rng = np.random.default_rng(0)
    for mix in ("ep", "grid"):
        r, var = rows(mix, n, rng)
        for dof in (1.0, 4.0, 30.0):
            lik = StudentT(dof, 1.0)
            times = []
            for _ in range(repeats):
                start = time.process_time()
                lik.tilted(r, np.zeros(n), var)
                times.append(time.process_time() - start)
            lines.append(f"| {mix} | {dof:g} | {np.median(times) * 1e5 / n:.3f} |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="this tree")
    parser.add_argument("--skip-accuracy", action="store_true")
    args = parser.parse_args()
    print(f"## {args.label}: speed ({datetime.date.today()}, {platform.machine()}, "
          f"{os.cpu_count()} cores shared, numpy {np.__version__})\n")
    print("\n".join(speed()))
    if not args.skip_accuracy:
        print(f"\n## {args.label}: largest error against quad in f (scale 0.7)\n")
        print("\n".join(accuracy()))


if __name__ == "__main__":
    main()
