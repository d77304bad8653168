"""The growth curve of the default constructors, 10^4 .. 10^6 rows: table and plot.

Reads the JSON files ``million.py`` writes in the default mode with a ``--tag`` starting
``growth`` (or any given with ``--inputs``) and writes
``benchmarks/scale/results/million_growth.md`` and ``.png``: per estimator and size, the fit CPU
time, the BLAS floor measured in the same process (one chunked ``K(X, X_u)`` block and one
triangular solve at ``p = 100``), their ratio, the peak resident memory, the test metrics and
the load average before / after the fit (the machine is shared: CPU times grow with the
load, the ratio to the floor of the same process less so).

Usage::

    python million.py --only regressor --sizes 10000,100000,300000,1000000 --tag growth21_reg
    python million.py --only classifier --sizes 10000,100000,300000,1000000 --tag growth21_clf
    python million_growth.py
"""

import argparse
import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def rows_of(paths):
    """The successful runs of the given ``million.py`` JSON files, by estimator then size."""
    rows = []
    for path in paths:
        rows += [r for r in json.loads(Path(path).read_text()) if "fit_cpu" in r]
    return sorted(rows, key=lambda r: (r["estimator"], r["n"]))


def table(rows):
    """The markdown table of ``rows``."""
    lines = [
        "| estimator | n | fit CPU (s) | floor CPU (s) | x floor (CPU) | fit wall (s) | peak (GB) "
        "| test | load before / after |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        if r["estimator"] == "regressor":
            test = f"NMSE {r['nmse']:.4f}, NLPD {r['nlpd']:.3f}, z^2 {r['z2']:.3f}"
        else:
            test = f"NLP {r['nlp']:.4f}, error {r['error']:.4f}"
        lines.append(
            f"| {r['estimator']} | {r['n']:,} | {r['fit_cpu']:.1f} | {r['floor_cpu']:.2f} | "
            f"{r['fit_cpu'] / r['floor_cpu']:.1f} | {r['fit_wall']:.1f} | "
            f"{r['peak_rss_gb']:.2f} | {test} | {r['load_before']:.1f} / {r['load_after']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def plot(rows, path):
    """Fit CPU and floor CPU against n (log-log), one colour per estimator."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax_ratio) = plt.subplots(1, 2, figsize=(10, 4))
    for est, colour in (("regressor", "C0"), ("classifier", "C1")):
        sel = [r for r in rows if r["estimator"] == est]
        if not sel:
            continue
        n = [r["n"] for r in sel]
        ax.loglog(n, [r["fit_cpu"] for r in sel], "o-", color=colour, label=f"{est} fit")
        ax.loglog(n, [r["floor_cpu"] for r in sel], "x:", color=colour,
                  label=f"floor ({est}'s process)")
        ax_ratio.semilogx(n, [r["fit_cpu"] / r["floor_cpu"] for r in sel], "o-",
                          color=colour, label=est)
    ax.set_xlabel("training rows n")
    ax.set_ylabel("CPU time (s)")
    ax.set_title("default constructors, 20 features")
    ax.legend(fontsize=8)
    ax_ratio.axhline(60, color="grey", ls="--", lw=1, label="goal (60x)")
    ax_ratio.set_xlabel("training rows n")
    ax_ratio.set_ylabel("fit CPU / floor CPU")
    ax_ratio.set_yscale("log")
    ax_ratio.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--inputs", nargs="*", default=sorted(RESULTS.glob("million_default_growth*.json")),
        help="million.py JSON files (default: results/million_default_growth*.json)",
    )
    args = parser.parse_args()
    rows = rows_of(p for p in args.inputs if Path(p).exists())
    text = (
        "# Growth of the default constructors (synthetic, 20 features)\n\n"
        "`benchmarks/scale/million.py` default mode, `learning_rows=\"auto\"`, one fit per row, "
        "each in its own process; tables `million_default_growth*.md`. The floor is one "
        "chunked `K(X, X_u)` and one triangular solve at p = 100, timed in the same process "
        "after the fit. The machine was shared (load averages in the last column, 2 cores).\n\n"
        + table(rows)
    )
    (RESULTS / "million_growth.md").write_text(text)
    plot(rows, RESULTS / "million_growth.png")
    print(text)


if __name__ == "__main__":
    main()
