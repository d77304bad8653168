"""Fit time of SparseGPRegressor versus n (fixed p) and versus p (fixed n), on log-log axes.

Fixed hyperparameters (``optimizer=None``), the default selection (matching_pursuit on a
fresh working set of 59 each step), data as in ``floor.py`` (``X ~ U(-1, 1)^d``, d = 10). scikit-learn's full
``GaussianProcessRegressor`` (also ``optimizer=None``) is timed for the n it can handle. Times are
process CPU seconds (all threads; the machine may be shared), median of ``--repeats`` fits. The
slopes are least-squares fits of log time on log n (expected near 1) and log p (near 2) over
the upper half of each range, where fixed per-fit overheads no longer dominate.

Usage::

    python benchmarks/scale/scaling.py           # n up to 64,000, p up to 400
    python benchmarks/scale/scaling.py --quick   # n up to 16,000, p up to 200

Writes ``benchmarks/scale/results/scaling.md`` and ``benchmarks/scale/scaling.png``.
"""

import argparse
import os
import platform
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from floor import kernel_for, make_data
from sklearn.gaussian_process import GaussianProcessRegressor

from skgpsparse import SparseGPRegressor

HERE = Path(__file__).resolve().parent


def cpu_time(make, X, y, repeats):
    times = []
    for _ in range(repeats):
        model = make()
        c = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, y)
        times.append(time.process_time() - c)
    return float(np.median(times))


def slope(x, t):
    half = len(x) // 2
    return float(np.polyfit(np.log(x[half:]), np.log(t[half:]), 1)[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    d = 10
    kernel = kernel_for(d)
    if args.quick:
        ns, p_fixed = [1000, 2000, 4000, 8000, 16000], 100
        ps, n_fixed = [25, 50, 100, 200], 8000
        n_full = [500, 1000, 2000]
    else:
        ns, p_fixed = [2000, 4000, 8000, 16000, 32000, 64000], 100
        ps, n_fixed = [25, 50, 100, 200, 400], 16000
        n_full = [500, 1000, 2000, 4000]
    X_all, y_all, _ = make_data(max(ns + [n_fixed]), d)

    def sparse(p):
        return lambda: SparseGPRegressor(
            kernel, noise_variance=0.01, max_basis=p, optimizer=None, random_state=0
        )

    t_n = []
    for n in ns:
        t_n.append(cpu_time(sparse(p_fixed), X_all[:n], y_all[:n], args.repeats))
        print(f"sparse n={n} p={p_fixed}: {t_n[-1]:.2f} s", flush=True)
    t_p = []
    for p in ps:
        t_p.append(cpu_time(sparse(p), X_all[:n_fixed], y_all[:n_fixed], args.repeats))
        print(f"sparse n={n_fixed} p={p}: {t_p[-1]:.2f} s", flush=True)
    t_full = []
    for n in n_full:
        full = lambda: GaussianProcessRegressor(kernel, alpha=0.01, optimizer=None)
        t_full.append(cpu_time(full, X_all[:n], y_all[:n], args.repeats))
        print(f"full GP n={n}: {t_full[-1]:.2f} s", flush=True)
    s_n, s_p = slope(np.array(ns), np.array(t_n)), slope(np.array(ps), np.array(t_p))
    s_full = slope(np.array(n_full), np.array(t_full))

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.loglog(ns, t_n, "o-", label=f"SparseGPRegressor, p={p_fixed} (slope {s_n:.2f})")
    ax1.loglog(n_full, t_full, "s--", label=f"sklearn full GP (slope {s_full:.2f})")
    ax1.set_xlabel("n")
    ax1.set_ylabel("fit CPU time (s)")
    ax1.legend()
    ax2.loglog(ps, t_p, "o-", label=f"SparseGPRegressor, n={n_fixed} (slope {s_p:.2f})")
    ax2.set_xlabel("p (max_basis)")
    ax2.legend()
    fig.suptitle("Fit time, fixed hyperparameters, matching_pursuit")
    fig.tight_layout()
    fig.savefig(HERE / ("scaling_quick.png" if args.quick else "scaling.png"), dpi=100)

    lines = [
        "# Scaling of the fit time\n",
        (
            f"Machine: {platform.node()} ({platform.machine()}, {os.cpu_count()} cores), load "
            f"average {os.getloadavg()[0]:.1f} (shared machine). Date: "
            f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}.\n"
        ),
        (
            f"Process CPU seconds, median of {args.repeats} fits; d = {d}; fixed "
            "hyperparameters. Slopes: least squares on the upper half of each range.\n"
        ),
        (
            f"Slope in n (p = {p_fixed}): **{s_n:.2f}**; slope in p (n = {n_fixed}): "
            f"**{s_p:.2f}**; full GP slope in n: {s_full:.2f}.\n"
        ),
        "| model | n | p | fit CPU (s) |\n|---|---:|---:|---:|",
    ]
    lines += [f"| sparse | {n} | {p_fixed} | {t:.2f} |" for n, t in zip(ns, t_n)]
    lines += [f"| sparse | {n_fixed} | {p} | {t:.2f} |" for p, t in zip(ps, t_p)]
    lines += [f"| sklearn full GP | {n} | - | {t:.2f} |" for n, t in zip(n_full, t_full)]
    out = HERE / "results" / ("scaling_quick.md" if args.quick else "scaling.md")
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
