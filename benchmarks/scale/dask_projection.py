"""Projection of a 10^8-row default fit on 16 and 64 dask workers, from measured costs.

A two-core machine cannot run 64 workers; this script builds the time of a large fit from
what ``dask_scale.py`` measured on 2 workers (``results/dask_scale_costs.json``): for every
actor call of the measured fit, its function, wall time and bytes. Each call is split into

- a **round trip**: the no-op call's latency measured in the same run, ``t_1`` for one actor
  and ``t_2`` for two; with ``K`` partitions the driver sends ``K`` messages and waits for
  the slowest, modelled as ``t_1 + (K - 1) (t_2 - t_1)`` (the extra partition's cost as
  measured; the driver's event loop handles the messages one after another);
- **row work**: the call's wall time less the two-partition round trip (of the run that
  measured the call, when its costs file has the latency; else the first file's), taken as
  proportional to the rows per partition (every partition function is a pass over its rows
  in blocks; the partitions run in parallel, one per worker, one core each as measured);
- **bytes**: a call's bytes cross a network of ``--bandwidth`` bytes/s (default 1 GB/s,
  10 GbE) between driver and workers. The calls that move bytes per row (``BYTES_PER_ROW``:
  the classifier's EP sites gathered to the driver, ``2 n`` floats back and ``n`` indices
  sent) are scaled by ``N / n``; every other call moves per partition what does not depend
  on its rows (vectors, ``p x p`` matrices, the fixed-size fetch of the learning rows), so
  its measured bytes per partition are scaled by the number of partitions.
- **fixed-size calls** (``FIXED_SIZE``: the fetch of the learning rows) keep their measured
  work.
- **the ADF start** (``SEQUENTIAL``: the classifier's default EP starts by one ADF pass that
  visits the partitions in row order, one call per partition): one call and one single-actor
  round trip per partition, its row work the measured pass's scaled by ``N / n`` (one pass
  over all rows, one worker at a time).

The driver's own work (learning on the ``learning_rows`` subsample, the ``p x p`` factors,
reductions) is the measured fit's wall time outside the actor calls, constant in ``N``, plus
the one driver step that grows with ``N``: drawing the learning subsample
(``RandomState.choice(N, m, replace=False)`` permutes ``N`` indices), measured here at
``10^7`` and scaled linearly. The default fits (``fits`` of the costs files: the overhead
part's 10^5-row fits and the memory part's 10^6-row ones) are projected with a table of
their calls by function (the posterior, calibration and EP passes); the greedy fit at fixed
hyperparameters (one forward step per basis vector on every row) from part 3's records, with
its O(N) candidate masks on the driver measured here too. Each costs file's row work is
scaled by the share of a core its run got (``--core-share``, one per file: a loaded
machine's fits ran slower than a core would).

Usage::

    python benchmarks/scale/dask_projection.py [--rows 1e8] [--workers 16 64] [--costs PATH ...]
        [--core-share SHARE ...]

Prints markdown tables (the dask page quotes them); writes ``results/dask_projection.md``.
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def _driver_per_row(m=20_000, n=10**7, repeats=3):
    """Seconds per row of the driver's O(N) steps: the subsample draw, the candidate mask."""
    rng = np.random.RandomState(0)
    draw, mask = [], []
    in_basis = np.zeros(n, dtype=bool)
    for _ in range(repeats):
        tic = time.perf_counter()
        rng.choice(n, size=m, replace=False)
        draw.append(time.perf_counter() - tic)
        tic = time.perf_counter()
        np.flatnonzero(~(in_basis | in_basis | in_basis))  # RegressionState.candidates()
        mask.append(time.perf_counter() - tic)
    return float(np.median(draw)) / n, float(np.median(mask)) / n


# Calls whose bytes grow with the rows: the classifier's EP sites gathered at the end (16
# bytes per row back, the 8-byte indices sent), and the per-row gathers of adaptive sampling
# and of the criteria that score every remaining row. Every other call sends each partition,
# and gets back from it, what does not depend on its rows (vectors and p x p matrices, the
# learning rows' fetch of a fixed size).
BYTES_PER_ROW = {"_p_sites", "_c_weights", "_c_light", "_p_q", "_p_q_and_residual"}
# Calls made once per partition, one after another: the classifier's ADF start, which visits
# the partitions in row order. Their number grows with the partitions; together they pass
# over the rows once, on one worker at a time.
SEQUENTIAL = {"_p_adf"}
# Calls whose work does not grow with the rows: the fetch of given rows (the learning
# subsample, whose size is fixed; a working set).
FIXED_SIZE = {"_take_rows"}


def project_calls(fit, latency, n_rows, workers, bandwidth, core_share=1.0):
    """``{function: (round trips, row work, transfer)}`` seconds of a fit's actor calls on
    ``n_rows`` rows and ``workers`` workers (module docstring)."""
    one, two = latency["one actor"], latency["both partitions (rows.map)"]
    trip = one + (workers - 1) * max(two - one, 0.0)
    # the round trips inside the measured calls: the latency of the same run, where known
    own = fit.get("latency") or latency
    one_m, two_m = own["one actor"], own["both partitions (rows.map)"]
    measured = fit["workers"]
    per_partition = (n_rows / workers) / (fit["n"] / measured)  # rows, projected / measured
    out = {}
    for name, (calls, wall, sent, received) in fit["by_function"].items():
        scale = 1.0 if name in FIXED_SIZE else per_partition
        moved = sent + received
        if name in BYTES_PER_ROW:
            transfer = moved * (n_rows / fit["n"]) / bandwidth
        else:  # each partition's own message, as measured per partition
            transfer = moved / measured * workers / bandwidth
        if name in SEQUENTIAL:  # one partition per call, one call per partition
            many = calls * workers / measured
            out[name] = (many * one, many * max(wall / calls - one_m, 0.0) * scale * core_share,
                         transfer)
        else:
            out[name] = (calls * trip, max(wall - calls * two_m, 0.0) * scale * core_share,
                         transfer)
    return out


def project(fit, latency, n_rows, workers, bandwidth, driver_per_row, per_step_driver=0.0,
            core_share=1.0):
    """Seconds of the fit ``fit`` (a costs record) on ``n_rows`` rows and ``workers`` workers.

    Returns ``(total, driver, round trips, row work, transfer)``.
    """
    calls = project_calls(fit, latency, n_rows, workers, bandwidth, core_share)
    trips, work, transfer = (sum(c[k] for c in calls.values()) for k in range(3))
    calls_wall = sum(rec[1] for rec in fit["by_function"].values())
    driver = max(fit["wall"] - calls_wall, 0.0) + driver_per_row * n_rows
    driver += per_step_driver * n_rows * fit.get("steps", 0)
    return driver + trips + work + transfer, driver, trips, work, transfer


def breakdown(name, fit, latency, n_rows, workers, bandwidth, core_share):
    """Markdown rows: each function's calls and projected seconds in the fit ``fit``."""
    calls = project_calls(fit, latency, n_rows, workers, bandwidth, core_share)
    rows = []
    for fn, (trips, work, transfer) in sorted(calls.items(), key=lambda kv: -sum(kv[1])):
        count = fit["by_function"][fn][0]
        if fn in SEQUENTIAL:
            count = f"{count} -> {count * workers // fit['workers']}"
        rows.append(f"| {name} | {workers} | `{fn}` | {count} | {trips:.1f} s | {work:.1f} s "
                    f"| {transfer:.1f} s |")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=float, default=1e8)
    parser.add_argument("--workers", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--bandwidth", type=float, default=1e9, help="bytes/s driver <-> workers")
    parser.add_argument(
        "--core-share", type=float, nargs="+", default=[1.0],
        help="share of a core each measured process got (CPU / wall of the in-memory fit of "
        "the same run, on a loaded machine), one per costs file (or one for all); the row "
        "work of the file's fits is scaled by it",
    )
    parser.add_argument("--costs", nargs="+", default=[str(RESULTS / "dask_scale_costs.json")],
                        help="costs files of dask_scale.py runs (merged; the first's latency)")
    args = parser.parse_args()
    shares = args.core_share * len(args.costs) if len(args.core_share) == 1 else args.core_share
    if len(shares) != len(args.costs):
        parser.error("--core-share takes one value, or one per --costs file")
    costs = {}
    for path, share in reversed(list(zip(args.costs, shares))):
        loaded = json.loads(Path(path).read_text())
        for key, value in loaded.items():
            if key in ("fits", "greedy"):  # with the run's core share and latency, if known
                value = {k: {**rec, "core_share": share, "latency": loaded.get("latency")}
                         for k, rec in value.items()}
            costs[key] = {**costs.get(key, {}), **value} if isinstance(value, dict) else value
    latency = costs["latency"]
    draw, mask = _driver_per_row()
    n_rows = int(args.rows)
    one, two = latency["one actor"], latency["both partitions (rows.map)"]
    sources = ", ".join(Path(c).name for c in args.costs)
    lines = [
        f"Projection of a {n_rows:.0e}-row fit (`python benchmarks/scale/dask_projection.py`, "
        f"from {sources}): round trip {1e3 * one:.1f} ms for one actor, "
        f"+{1e3 * max(two - one, 0):.1f} ms per further partition; driver O(N) steps "
        f"{1e9 * draw:.0f} ns/row (subsample draw), {1e9 * mask:.1f} ns/row per greedy step "
        f"(candidate masks); network {args.bandwidth / 1e9:g} GB/s; row work scaled by the "
        f"core share of each measured run ({', '.join(f'{c:g}' for c in shares)}).",
        "",
        "| fit | measured on | workers | total | driver | round trips | row work | transfer "
        "| rows per worker | n x max_basis block per worker |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    default = [(name.replace(" overhead", " (default)").replace(" memory", " (default)"), rec)
               for name, rec in costs.get("fits", {}).items()]
    fits = [(name, rec, 0.0) for name, rec in default]
    fits += [(f"SparseGPRegressor(optimizer=None), greedy n={n}", rec, 2 * mask)
             for n, rec in costs.get("greedy", {}).items()]
    for name, rec, per_step in fits:
        for workers in args.workers:
            total, driver, trips, work, transfer = project(
                rec, latency, n_rows, workers, args.bandwidth,
                draw if "greedy" not in name else 0.0, per_step, rec["core_share"],
            )
            rows = n_rows / workers
            lines.append(
                f"| {name} | {rec['n']:,} rows, {rec['workers']} workers | "
                f"{workers} | {total / 60:.1f} min | {driver / 60:.1f} min | "
                f"{trips / 60:.1f} min | {work / 60:.1f} min | {transfer / 60:.1f} min | "
                f"{rows:,.0f} | {rows * rec['p'] * 8 / 2**30:.1f} GiB |"
            )
    lines += [
        "",
        "The default fits' actor calls, projected (calls: as measured; the ADF start's grow "
        "with the partitions):",
        "",
        "| fit | workers | function | calls | round trips | row work | transfer |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, rec in default:
        for workers in args.workers:
            lines += breakdown(f"{name}, measured at {rec['n']:,} rows", rec, latency, n_rows,
                               workers, args.bandwidth, rec["core_share"])
    print("\n".join(lines))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "dask_projection.md").write_text("# " + __doc__.split("\n\n")[0] + "\n\n"
                                                + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
