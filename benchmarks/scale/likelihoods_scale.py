"""Non-Gaussian targets at scale: each likelihood's default fit at 10^4 .. 10^6 rows x 20 features.

Issue 47's goal at scale: with the default constructor, ``SparseGPRegressor(likelihood=
"poisson")`` and ``SparseGPRegressor(likelihood="student_t")`` fit 10^6 rows in at most twice
the time of the probit classifier's default fit at that size. On ``million.py``'s rows (``X``
standard normal, n x 20, ``f = sin(x0) + x1^2/2 - x2 x3/2``; 20,000 test rows from the same
law), each model below is fitted by its default constructor (``random_state=0``), each in its
own process so that its peak resident memory is its own:

- ``classifier``: ``SparseGPClassifier`` on the labels ``f + 0.3 e > median(f)`` (the
  baseline); test NLP and error rate;
- ``poisson``: ``likelihood="poisson"`` on counts ``y ~ Poisson(exp(f/2 - 0.3))`` (mean count
  about 1.1); test mean Poisson deviance of the predicted counts and NLPD (minus the mean of
  ``log_predictive_density``);
- ``student_t``: ``likelihood="student_t"`` on ``f + 0.3 e`` with 10 % of the training targets
  shifted by 3 to 10 standard deviations of the clean targets (random sign), tested on clean
  rows: NMSE of the predicted mean against ``f`` (over the variance of ``f``), NLPD of the
  clean test targets and mean ``z^2 = (y - mean)^2 / var`` with ``var`` the predictive
  variance of ``y`` (where finite);
- ``gaussian_corrupt`` / ``gaussian_clean``: the Gaussian default on the same corrupted
  targets and on the clean ones (``z^2`` with the noise included), for reference.

Per fit: wall and CPU time, the BLAS floor at that size (``floor.py``'s: one chunked
``K(X, X_u)`` block and one triangular solve at ``p = 100``, timed in the same process), the
ratio of the fit's CPU to it and to the classifier's fit CPU at the same size, peak resident
memory, test metrics, load average before and after (the machine is shared). Results of
earlier runs in the JSON file are kept and replaced per (model, n), so sizes can be run
separately (``--report`` rewrites the table and the plot from the JSON file). ``--profile``: one fit under cProfile (no result row), the top 15 functions by
own time printed.

Usage (from the repository root)::

    python benchmarks/scale/likelihoods_scale.py --sizes 10000,100000
    nohup python benchmarks/scale/likelihoods_scale.py --sizes 1000000 &
    python benchmarks/scale/likelihoods_scale.py --profile student_t --sizes 100000

Writes ``benchmarks/scale/results/likelihoods_scale.md``, ``.json`` and ``.png``.
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results"
NAME = "likelihoods_scale"
TEST_ROWS = 20_000
MODELS = ["classifier", "poisson", "student_t", "gaussian_corrupt", "gaussian_clean"]
OUTLIER_SHARE = 0.1


def make_data(model, n, d, seed=0):
    """``X, y, X_test, y_test, f_test`` of ``model``'s task: ``n`` training rows, the test rows
    clean (their targets drawn from the model's noise law without gross errors)."""
    rng = np.random.default_rng(seed)
    m = n + TEST_ROWS
    X = rng.standard_normal((m, d))
    f = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 - 0.5 * X[:, 2] * X[:, 3]
    if model == "classifier":
        y = (f + 0.3 * rng.standard_normal(m) > np.median(f)).astype(int)
    elif model == "poisson":
        y = rng.poisson(np.exp(0.5 * f - 0.3)).astype(float)
    else:
        y = f + 0.3 * rng.standard_normal(m)
    X, X_t, y, y_t, f_t = X[:n], X[n:], y[:n], y[n:], f[n:]
    if model in ("student_t", "gaussian_corrupt"):
        # 10 % of the training rows hit by gross errors: shifted by 3-10 sd of the targets
        y = y.copy()
        hit = rng.choice(n, size=int(OUTLIER_SHARE * n), replace=False)
        shift = rng.uniform(3.0, 10.0, hit.size) * rng.choice([-1.0, 1.0], hit.size)
        y[hit] += shift * np.std(y)
    return X, y, X_t, y_t, f_t


def build(model):
    """The default constructor of ``model``."""
    from skgpsparse import SparseGPClassifier, SparseGPRegressor

    if model == "classifier":
        return SparseGPClassifier(random_state=0)
    if model in ("poisson", "student_t"):
        return SparseGPRegressor(likelihood=model, random_state=0)
    return SparseGPRegressor(random_state=0)


def metrics(model, est, X_t, y_t, f_t):
    """The test metrics of the fitted ``est`` on the clean test rows."""
    from sklearn.metrics import mean_poisson_deviance

    if model == "classifier":
        p1 = np.clip(est.predict_proba(X_t)[:, 1], 1e-300, 1.0 - 1e-16)
        return {"nlp": float(-np.mean(np.where(y_t == 1, np.log(p1), np.log1p(-p1)))),
                "error": float(np.mean((p1 > 0.5) != (y_t == 1)))}
    out = {"nlpd": float(-np.mean(est.log_predictive_density(X_t, y_t)))}
    mean, std = est.predict(X_t, return_std=True)
    if model == "poisson":
        out["deviance"] = float(mean_poisson_deviance(y_t, mean))
        out["mean_count_test"] = float(np.mean(y_t))
        return out
    if model == "student_t":
        var = std**2  # the predictive variance of y itself, noise included
    else:  # the Gaussian's std is the latent function's: add the noise
        var = std**2 + float(est.noise_variance_) * getattr(est, "_y_train_std", 1.0) ** 2
    out["nmse_f"] = float(np.mean((mean - f_t) ** 2) / np.var(f_t))
    out["nmse_y"] = float(np.mean((mean - y_t) ** 2) / np.var(y_t))
    if np.all(np.isfinite(var)):
        out["z2"] = float(np.mean((y_t - mean) ** 2 / var))
    return out


def child(model, n, d, profile=False):
    """Fit ``model`` on ``n`` rows in this process and print a ``RESULT`` JSON line."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from floor import floor, kernel_for

    X, y, X_t, y_t, f_t = make_data(model, n, d)
    est = build(model)
    out = {"model": model, "n": n, "d": d, "load_before": os.getloadavg()[0],
           "mean_target": float(np.mean(y))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if profile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            c = time.process_time()
            prof.runcall(est.fit, X, y)
            print(f"fit CPU under the profiler: {time.process_time() - c:.1f} s")
            pstats.Stats(prof).sort_stats("tottime").print_stats(15)
            pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
            return
        w, c = time.perf_counter(), time.process_time()
        est.fit(X, y)
        out["fit_wall"], out["fit_cpu"] = time.perf_counter() - w, time.process_time() - c
        out.update(metrics(model, est, X_t, y_t, f_t))
    out["kernel"] = str(est.kernel_)
    if hasattr(est, "likelihood_"):
        out["likelihood"] = repr(est.likelihood_)
    # the BLAS floor at this n: one K(X, X_u) block and one triangular solve, p = 100
    X_u = X[np.random.default_rng(1).choice(n, size=min(n, 100), replace=False)]
    w, c = time.perf_counter(), time.process_time()
    floor(kernel_for(d), X, X_u)
    out["floor_wall"], out["floor_cpu"] = time.perf_counter() - w, time.process_time() - c
    out["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    out["load_after"] = os.getloadavg()[0]
    print("RESULT " + json.dumps(out), flush=True)


def run_child(model, n, d, timeout):
    """One fit in a subprocess: its ``RESULT`` record, or a record of the failure."""
    cmd = [sys.executable, __file__, "--child", model, "--sizes", str(n), "--d", str(d)]
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"model": model, "n": n, "failed": f"stopped after {timeout:.0f} s wall"}
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if line:
        return json.loads(line[0][7:])
    print(proc.stdout[-2000:], proc.stderr[-2000:])
    return {"model": model, "n": n,
            "failed": f"exit {proc.returncode} after {time.perf_counter() - started:.0f} s"}


def test_text(r):
    """The test metrics of a record as one cell."""
    if "failed" in r:
        return r["failed"]
    if r["model"] == "classifier":
        return f"NLP {r['nlp']:.4f}, error {r['error']:.4f}"
    if r["model"] == "poisson":
        return (f"deviance {r['deviance']:.4f}, NLPD {r['nlpd']:.4f} (mean count "
                f"{r['mean_target']:.2f})")
    z2 = f", z^2 {r['z2']:.3f}" if "z2" in r else ""
    return f"NMSE(f) {r['nmse_f']:.2g}, NMSE(y) {r['nmse_y']:.4f}, NLPD {r['nlpd']:.4f}{z2}"


def table(rows):
    """The markdown table of ``rows`` (ratios to the classifier of the same size)."""
    clf = {r["n"]: r["fit_cpu"] for r in rows if r["model"] == "classifier" and "fit_cpu" in r}
    lines = [
        ("| model | n | fit wall (s) | fit CPU (s) | x classifier (CPU) | floor CPU (s) | "
         "x floor (CPU) | peak (GB) | test | load before / after |"),
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        if "fit_cpu" not in r:
            lines.append(f"| {r['model']} | {r['n']:,} | - | - | - | - | - | - | "
                         f"{test_text(r)} | - |")
            continue
        ratio = f"{r['fit_cpu'] / clf[r['n']]:.2f}" if r["n"] in clf else "-"
        lines.append(
            f"| {r['model']} | {r['n']:,} | {r['fit_wall']:.1f} | {r['fit_cpu']:.1f} | {ratio} | "
            f"{r['floor_cpu']:.2f} | {r['fit_cpu'] / r['floor_cpu']:.0f} | "
            f"{r['peak_rss_gb']:.2f} | {test_text(r)} | "
            f"{r['load_before']:.1f} / {r['load_after']:.1f} |"
        )
    kernels = [f"- {r['model']}, n = {r['n']:,}: `{r['kernel']}`"
               + (f", `{r['likelihood']}`" if "likelihood" in r else "")
               for r in rows if "kernel" in r]
    return "\n".join(lines) + "\n\nLearned kernels and likelihoods:\n\n" + "\n".join(kernels) + "\n"


def plot(rows, path):
    """Fit CPU against n (log-log), one line per model, with twice the classifier's and the
    floor."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for model in MODELS:
        done = [r for r in rows if r["model"] == model and "fit_cpu" in r]
        if done:
            ax.loglog([r["n"] for r in done], [r["fit_cpu"] for r in done], "o-", label=model)
    clf = sorted((r["n"], r["fit_cpu"]) for r in rows
                 if r["model"] == "classifier" and "fit_cpu" in r)
    if clf:  # issue 47's bound at scale
        ax.loglog([n for n, _ in clf], [2 * c for _, c in clf], "--", color="0.5",
                  label="2x classifier")
    floors = {r["n"]: r["floor_cpu"] for r in rows if "floor_cpu" in r}
    sizes = sorted(floors)
    ax.loglog(sizes, [floors[n] for n in sizes], "k:", label="floor (p = 100)")
    ax.set_xlabel("training rows n (20 features)")
    ax.set_ylabel("fit CPU (s)")
    ax.set_title("Default fits by likelihood")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated training rows")
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--only", default=",".join(MODELS), help="comma-separated models")
    parser.add_argument("--timeout", type=float, default=1500.0, help="wall seconds per fit")
    parser.add_argument("--profile", choices=MODELS, help="profile one fit of this model")
    parser.add_argument("--report", action="store_true",
                        help="rewrite the table and plot from the JSON file, fit nothing")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(v) for v in args.sizes.split(",")]
    if args.child or args.profile:
        child(args.child or args.profile, sizes[0], args.d, profile=bool(args.profile))
        return
    RESULTS.mkdir(exist_ok=True)
    json_path = RESULTS / f"{NAME}.json"
    for n in sizes if not args.report else []:
        for model in args.only.split(","):
            r = run_child(model, n, args.d, args.timeout)
            r["date"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
            print(r, flush=True)
            # re-read: another run of this script may have added rows meanwhile
            rows = json.loads(json_path.read_text()) if json_path.exists() else []
            rows = [o for o in rows if (o["model"], o["n"]) != (model, n)] + [r]
            rows.sort(key=lambda o: (o["n"], MODELS.index(o["model"])))
            json_path.write_text(json.dumps(rows, indent=1))
            write_report(rows)
    if args.report:
        write_report(json.loads(json_path.read_text()))
    print(f"wrote {RESULTS / NAME}.md")


def write_report(rows):
    """The markdown table and the plot of ``rows``."""
    dates = sorted(r["date"] for r in rows if "date" in r)
    header = (
        f"# Non-Gaussian targets at scale\n\nMachine: {platform.node()} "
        f"({os.cpu_count()} cores, shared), runs {dates[0]} to {dates[-1]}. Default "
        "constructors, each fit in its own process; floor = one chunked K(X, X_u) and "
        "one triangular solve at p = 100 in that process; x classifier = the fit's "
        "CPU over the default SparseGPClassifier's at the same n (issue 47's goal: "
        "<= 2 at 10^6 rows); peak = the child's maximum resident set size. Test rows "
        "are clean; NMSE(f) is against the noise-free f, NMSE(y) against the clean test "
        "targets.\n\n"
    )
    (RESULTS / f"{NAME}.md").write_text(header + table(rows))
    plot(rows, RESULTS / f"{NAME}.png")


if __name__ == "__main__":
    main()
