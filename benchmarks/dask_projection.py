"""Projection of a 10^8-row default fit on 16 and 64 dask workers, from measured costs.

A two-core machine cannot run 64 workers; this script builds the time of a large fit from
what ``dask_scale.py`` measured on 2 workers (``results/dask_scale_costs.json``): for every
actor call of the measured fit, its function, wall time and bytes. Each call is split into

- a **round trip**: the no-op call's latency measured in the same run, ``t_1`` for one actor
  and ``t_2`` for two; with ``K`` partitions the driver sends ``K`` messages and waits for
  the slowest, modelled as ``t_1 + (K - 1) (t_2 - t_1)`` (the extra partition's cost as
  measured; the driver's event loop handles the messages one after another);
- **row work**: the call's wall time less the two-partition round trip, taken as
  proportional to the rows per partition (every partition function is a pass over its rows
  in blocks; the partitions run in parallel, one per worker, one core each as measured);
- **bytes that grow with n** (e.g. the classifier's EP sites gathered to the driver, ``2 n``
  floats, and the ``n`` indices sent for them): the measured bytes scaled by ``N / n`` over
  a network of ``--bandwidth`` bytes/s (default 1 GB/s, 10 GbE) between driver and workers.

The driver's own work (learning on the ``learning_rows`` subsample, the ``p x p`` factors,
reductions) is the measured fit's wall time outside the actor calls, constant in ``N``, plus
the one driver step that grows with ``N``: drawing the learning subsample
(``RandomState.choice(N, m, replace=False)`` permutes ``N`` indices), measured here at
``10^7`` and scaled linearly. The greedy fit at fixed hyperparameters (one forward step per
basis vector on every row) is projected the same way from part 3's records, with its O(N)
candidate masks on the driver measured here too.

Usage::

    python benchmarks/dask_projection.py [--rows 1e8] [--workers 16 64] [--costs PATH]

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


def project(fit, latency, n_rows, workers, bandwidth, driver_per_row, per_step_driver=0.0,
            core_share=1.0):
    """Seconds of the fit ``fit`` (a costs record) on ``n_rows`` rows and ``workers`` workers.

    Returns ``(total, driver, round trips, row work, transfer)``.
    """
    one, two = latency["one actor"], latency["both partitions (rows.map)"]
    trip = one + (workers - 1) * max(two - one, 0.0)
    scale = (n_rows / workers) / (fit["n"] / fit["workers"])
    trips = work = transfer = calls_wall = 0.0
    for calls, wall, sent, received in fit["by_function"].values():
        calls_wall += wall
        trips += calls * trip
        work += max(wall - calls * two, 0.0) * scale * core_share
        # bytes of at least one per row grow with the rows (gathered or sent per row)
        moved = sent + received
        if moved >= fit["n"]:
            transfer += moved * (n_rows / fit["n"]) / bandwidth
    driver = max(fit["wall"] - calls_wall, 0.0) + driver_per_row * n_rows
    driver += per_step_driver * n_rows * fit.get("steps", 0)
    return driver + trips + work + transfer, driver, trips, work, transfer


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=float, default=1e8)
    parser.add_argument("--workers", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--bandwidth", type=float, default=1e9, help="bytes/s driver <-> workers")
    parser.add_argument(
        "--core-share", type=float, default=1.0,
        help="share of a core each measured process got (CPU / wall of the in-memory fit of "
        "the same run, on a loaded machine); the row work is scaled by it",
    )
    parser.add_argument("--costs", nargs="+", default=[str(RESULTS / "dask_scale_costs.json")],
                        help="costs files of dask_scale.py runs (merged; the first's latency)")
    args = parser.parse_args()
    costs = {}
    for path in reversed(args.costs):
        for key, value in json.loads(Path(path).read_text()).items():
            costs[key] = {**costs.get(key, {}), **value} if isinstance(value, dict) else value
    latency = costs["latency"]
    draw, mask = _driver_per_row()
    n_rows = int(args.rows)
    one, two = latency["one actor"], latency["both partitions (rows.map)"]
    sources = ", ".join(Path(c).name for c in args.costs)
    lines = [
        f"Projection of a {n_rows:.0e}-row fit (`python benchmarks/dask_projection.py`, from "
        f"{sources}): round trip {1e3 * one:.1f} ms for one actor, "
        f"+{1e3 * max(two - one, 0):.1f} ms per further partition; driver O(N) steps "
        f"{1e9 * draw:.0f} ns/row (subsample draw), {1e9 * mask:.1f} ns/row per greedy step "
        f"(candidate masks); network {args.bandwidth / 1e9:g} GB/s; row work scaled by a "
        f"core share of {args.core_share:g}.",
        "",
        "| fit | measured on | workers | total | driver | round trips | row work | transfer "
        "| rows per worker | n x max_basis block per worker |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    fits = [(name, rec, 0.0) for name, rec in costs.get("fits", {}).items()
            if name.endswith("overhead")]
    fits += [(f"SparseGPRegressor(optimizer=None), greedy n={n}", rec, 2 * mask)
             for n, rec in costs.get("greedy", {}).items()]
    for name, rec, per_step in fits:
        for workers in args.workers:
            total, driver, trips, work, transfer = project(
                rec, latency, n_rows, workers, args.bandwidth,
                draw if "greedy" not in name else 0.0, per_step, args.core_share,
            )
            rows = n_rows / workers
            lines.append(
                f"| {name.replace(' overhead', ' (default)')} | {rec['n']:,} rows, 2 workers | "
                f"{workers} | {total / 60:.1f} min | {driver / 60:.1f} min | "
                f"{trips / 60:.1f} min | {work / 60:.1f} min | {transfer / 60:.1f} min | "
                f"{rows:,.0f} | {rows * rec['p'] * 8 / 2**30:.1f} GiB |"
            )
    print("\n".join(lines))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "dask_projection.md").write_text("# " + __doc__.split("\n\n")[0] + "\n\n"
                                                + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
