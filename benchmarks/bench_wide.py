"""The main job on wide tables against its floor, in one run.

For each width ``p`` a raw Gaussian chain (:func:`dpggm.datasets.make_raw_chain`, seed 0)
of ``n`` records is fitted with ``PrivateGraph(budget=ZCDP(rho), random_state=0)`` and
compared with the floor of any estimator of this kind measured in the same child process:

* in memory: ``X^T X`` (one NumPy product) + one graphical lasso solve
  (:func:`dpggm.solvers.glasso.graphical_lasso`) of the fit's release at its ``alpha_``;
* from a CSV file: the faster of pyarrow's ``read_csv`` and streaming ``open_csv`` (read
  into one array), + ``X^T X`` + the same solve (the reading in a child of its own, so
  that the peak printed is the fit's);
* from Parquet parts on Dask (``--dask``): ``pyarrow.parquet.read_table`` of the folder +
  ``X^T X`` + the same solve, against ``fit(dask.dataframe.read_parquet(folder))``;
* from a Parquet folder by the command line (``--folder``): ``python -m dpggm graph
  FOLDER --rho R --seed 0 --out DIR`` then ``dpggm report DIR``, peak memory only (the
  acceptance of a wide folder is that it completes within a memory budget and the report
  renders).

Every case runs in a child process (a fit from a file in one, its floor's reading in
another); the fit's own peak resident memory comes from ``os.wait4``, with the child's
``VmHWM`` beside it. The files are written by children too, and a first child fits a small
file so that numba's kernels are compiled (and cached) before anything is measured. The
launching process never holds the data: Linux counts the launcher's own peak in a child's
``ru_maxrss`` (the child is started by ``vfork``, and at ``exec`` the kernel folds the high
mark of the memory it leaves -- the launcher's -- into the child's), so a launcher that
had written a 2 000 000 x 20 file made every child report its 1.4 GB. The launcher's peak
is printed with the load; a child's peak that does not exceed it is marked as not
measured. The load average (``uptime``) is printed before each case: the machine may be
shared, so read the ratios (same process, same minute), not the seconds.

Usage::

    nice -n 10 python benchmarks/bench_wide.py                       # p 100 300 1000 2000, in memory
    nice -n 10 python benchmarks/bench_wide.py --sizes 1000 --csv    # also from a CSV file
    nice -n 10 python benchmarks/bench_wide.py --dask                # p 1000, n 500 000 (long)
    nice -n 10 python benchmarks/bench_wide.py --folder --sizes 3000 --n 100000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def _launcher_peak() -> float:
    """The launching process's own peak resident memory (MB): a floor under every
    child's ``ru_maxrss`` (see the module's docstring)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _own_peak() -> float | None:
    """This process's peak resident memory (MB) since it started its program (``VmHWM``;
    Linux only): unlike ``ru_maxrss`` it owes nothing to the process that launched it."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


#: The environment variable through which the launcher tells its children the graph.
GRAPH_VARIABLE = "DPGGM_BENCH_WIDE_GRAPH"
GRAPHS = ("raw-chain", "sparse")


def _data(n: int, p: int) -> np.ndarray:
    """The records of the benchmark's graph (``--graph``): ``raw-chain`` is
    :func:`dpggm.datasets.make_raw_chain` (neighbours correlated at up to 0.998: near
    collinear, the release cannot resolve most of its partial correlations at this
    noise); ``sparse`` a random graph of average degree 4 with partial correlations
    about 0.2 and a well-conditioned precision (:func:`dpggm.datasets.make_sparse_precision`,
    row-sum diagonal), in the same raw units."""
    from dpggm.datasets import make_raw_chain, make_sparse_precision

    graph = os.environ.get(GRAPH_VARIABLE, "raw-chain")
    if graph == "raw-chain":
        frame, _ = make_raw_chain(n_samples=n, n_features=p, random_state=0)
        return frame.to_numpy()
    data = make_sparse_precision(n_samples=n, n_features=p, sparsity=1.0 - 4.0 / (p - 1),
                                 off_diagonal=0.4, diagonal="row_sum", margin=0.3,
                                 random_state=0)
    means = np.geomspace(3.0, 300.0, p)
    scales = np.geomspace(0.5, 20.0, p)
    scales[1::2] = scales[1::2][::-1]
    return means + scales * (data.X / np.sqrt(np.diag(data.covariance)))


def _glasso_seconds(graph) -> float:
    from dpggm.solvers.glasso import graphical_lasso
    from dpggm.solvers.toolkit import single_threaded_blas

    start = time.perf_counter()
    with warnings.catch_warnings(), single_threaded_blas():
        warnings.simplefilter("ignore")
        graphical_lasso(graph.noisy_covariance_, graph.alpha_)
    return time.perf_counter() - start


def _fit(source, rho: float):
    from dpggm import ZCDP, PrivateGraph

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = PrivateGraph(budget=ZCDP(rho), random_state=0).fit(source)
    return graph, time.perf_counter() - start


def _gram_seconds(X: np.ndarray) -> float:
    """The faster of two ``X^T X`` (the first also starts BLAS's threads)."""
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        X.T @ X
        best = min(best, time.perf_counter() - start)
    return best


def child_memory(p: int, n: int, rho: float) -> dict:
    X = _data(n, p)
    gram = _gram_seconds(X)
    graph, fit = _fit(X, rho)
    return {"fit": fit, "read": 0.0, "gram": gram, "glasso": _glasso_seconds(graph),
            "alpha": graph.alpha_, "edges": int(graph.edges_.shape[0])}


def _read_csv_seconds(path: Path) -> tuple[float, np.ndarray]:
    import pyarrow.csv as pacsv

    start = time.perf_counter()
    table = pacsv.read_csv(path)
    X = np.column_stack([c.to_numpy() for c in table.columns])
    whole = time.perf_counter() - start
    del table, X
    start = time.perf_counter()
    reader = pacsv.open_csv(path)
    blocks = [np.column_stack([c.to_numpy() for c in batch.columns]) for batch in reader]
    X = np.vstack(blocks)
    streaming = time.perf_counter() - start
    return min(whole, streaming), X


def child_csv(p: int, n: int, rho: float, path: str) -> dict:
    graph, fit = _fit(path, rho)
    return {"fit": fit, "glasso": _glasso_seconds(graph), "alpha": graph.alpha_,
            "edges": int(graph.edges_.shape[0])}


def child_warm(p: int, n: int, rho: float, folder: str) -> dict:
    """Fit a small table from memory and from a CSV file: numba compiles the kernels the
    measured fits use (the first run after a checkout compiles them for seconds, with
    some 50 MB more memory) and caches them for the other children. The kernels' types
    do not depend on the table's size, so a small one compiles them all."""
    path = Path(folder) / "warm.csv"
    write_csv(path, n, p)
    _fit(_data(n, p), rho)
    _fit(str(path), rho)
    path.unlink()
    return {}


def child_write_csv(p: int, n: int, rho: float, path: str) -> dict:
    write_csv(Path(path), n, p)
    return {}


def child_write_parquet(p: int, n: int, rho: float, folder: str, parts: str) -> dict:
    write_parquet(Path(folder), n, p, parts=int(parts))
    return {}


def child_csv_floor(p: int, n: int, rho: float, path: str) -> dict:
    read, X = _read_csv_seconds(Path(path))
    return {"read": read, "gram": _gram_seconds(X)}


def child_dask(p: int, n: int, rho: float, folder: str) -> dict:
    import dask.dataframe as dd

    graph, fit = _fit(dd.read_parquet(folder), rho)
    return {"fit": fit, "glasso": _glasso_seconds(graph), "alpha": graph.alpha_,
            "edges": int(graph.edges_.shape[0])}


def child_parquet_floor(p: int, n: int, rho: float, folder: str) -> dict:
    import pyarrow.parquet as pq

    start = time.perf_counter()
    table = pq.read_table(folder)
    X = np.column_stack([c.to_numpy() for c in table.columns])
    read = time.perf_counter() - start
    del table
    return {"read": read, "gram": _gram_seconds(X)}


def write_csv(path: Path, n: int, p: int) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    X = _data(n, p)
    pacsv.write_csv(pa.table({f"x{j}": X[:, j] for j in range(p)}), path)


def write_parquet(folder: Path, n: int, p: int, parts: int = 8) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    X = _data(n, p)
    for k, rows in enumerate(np.array_split(np.arange(n), parts)):
        block = X[rows]
        pq.write_table(pa.table({f"x{j}": block[:, j] for j in range(p)}),
                       folder / f"part-{k:03d}.parquet")


def _run_child(argv: list[str]) -> tuple[dict | None, float, int]:
    """Run a child, return (its JSON answer, its peak memory in MB, its exit status)."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, env=dict(os.environ))
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    lines = out.decode().strip().splitlines()
    answer = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
    return answer, usage.ru_maxrss / 1024, process.returncode


def _make(me: list[str], kind: str, p: int, n: int, *rest: str, rho: float = 1.0) -> None:
    """Write a data file (or warm the kernels) in a child: the launcher stays small (see
    the module's docstring)."""
    _, _, code = _run_child(me + [kind, str(p), str(n), str(rho), *rest])
    if code != 0:
        raise SystemExit(f"writing the data ({kind}) failed (exit {code})")


def _peak_text(peak: float, answer: dict | None) -> str:
    """The child's ``ru_maxrss`` with its own ``VmHWM``; not a measure of the child when
    it does not exceed the launcher's peak (which it includes)."""
    own = (answer or {}).get("own_peak")
    text = f"peak {peak:.0f} MB" + (f" (own VmHWM {own:.0f} MB)" if own is not None else "")
    launcher = _launcher_peak()
    if peak <= launcher + 1:
        text += f" [not measured: the launcher's own peak is {launcher:.0f} MB]"
    return text


def _fit_and_floor(me: list[str], fit_kind: str, floor_kind: str, p: int, n: int,
                   rho: float, source: Path) -> tuple[dict | None, float, int]:
    """The fit from a file in one child (its peak is the fit's own), the floor's reading
    and product in another."""
    fit, peak, code = _run_child(me + [fit_kind, str(p), str(n), str(rho), str(source)])
    floor, _, floor_code = _run_child(me + [floor_kind, str(p), str(n), str(rho),
                                            str(source)])
    if fit is None or floor is None:
        return None, peak, code or floor_code
    return {**floor, **fit}, peak, code  # the fit's own peak, not the floor's


def _print_ratio(label: str, answer: dict, peak: float) -> None:
    floor = answer["read"] + answer["gram"] + answer["glasso"]
    print(f"  {label}: fit {answer['fit']:.1f} s | floor {floor:.1f} s (read "
          f"{answer['read']:.1f} + XtX {answer['gram']:.1f} + glasso {answer['glasso']:.1f}) "
          f"| ratio {answer['fit'] / floor:.2f} | {_peak_text(peak, answer)} | alpha "
          f"{answer['alpha']:.3g}, {answer['edges']} edges", flush=True)


def run_folder(me: list[str], p: int, n: int, rho: float, work: Path) -> None:
    folder = work / f"parquet-{p}x{n}"
    _make(me, "write-parquet", p, n, str(folder), "8")
    out = work / f"result-{p}"
    command = [sys.executable, "-m", "dpggm", "graph", str(folder), "--rho", str(rho),
               "--seed", "0", "--out", str(out), "--quiet"]
    start = time.perf_counter()
    _, peak, code = _run_child(command)
    seconds = time.perf_counter() - start
    print(f"  folder {p} x {n}: dpggm graph exit {code}, {seconds:.0f} s, "
          f"{_peak_text(peak, None)}", flush=True)
    start = time.perf_counter()
    _, peak, code = _run_child([sys.executable, "-m", "dpggm", "report", str(out)])
    report = out / "report.html"
    size = report.stat().st_size / 1e6 if report.exists() else float("nan")
    print(f"  dpggm report exit {code}, {time.perf_counter() - start:.0f} s, "
          f"{_peak_text(peak, None)}, report.html {size:.1f} MB", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000, 2000])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--rho", type=float, default=1.0)
    parser.add_argument("--csv", action="store_true", help="also fit from a CSV file")
    parser.add_argument("--no-memory", action="store_true", help="skip the in-memory fits")
    parser.add_argument("--dask", action="store_true",
                        help="p = 1000, n = 500 000 from Parquet parts on Dask (long)")
    parser.add_argument("--folder", action="store_true",
                        help="dpggm graph + report on a Parquet folder (peak memory)")
    parser.add_argument("--graph", choices=GRAPHS, default=None,
                        help="the records' graph (default raw-chain; see _data)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.graph is not None:
        os.environ[GRAPH_VARIABLE] = args.graph
    if args.child:
        kind, p, n, rho, *rest = args.child
        function = {"memory": child_memory, "csv": child_csv, "csv-floor": child_csv_floor,
                    "dask": child_dask, "parquet-floor": child_parquet_floor,
                    "warm": child_warm, "write-csv": child_write_csv,
                    "write-parquet": child_write_parquet}[kind]
        answer = function(int(p), int(n), float(rho), *rest)
        print(json.dumps({**answer, "own_peak": _own_peak()}), flush=True)
        return
    me = [sys.executable, __file__, "--child"]
    with tempfile.TemporaryDirectory(prefix="dpggm-wide-", dir="/tmp") as tmp:
        work = Path(tmp)
        _make(me, "warm", 20, 2000, str(work), rho=args.rho)
        if args.folder:
            for p in args.sizes:
                print(f"p = {p}, n = {args.n} (load {_load()}; launcher {_launcher_peak():.0f} "
                      "MB)", flush=True)
                run_folder(me, p, args.n, args.rho, work)
            return
        if args.dask:
            p, n = 1000, 500_000
            folder = work / "dask-parts"
            _make(me, "write-parquet", p, n, str(folder), "20")
            print(f"p = {p}, n = {n}, Parquet parts on Dask (load {_load()}; launcher "
                  f"{_launcher_peak():.0f} MB)", flush=True)
            answer, peak, code = _fit_and_floor(me, "dask", "parquet-floor", p, n, args.rho,
                                                folder)
            if answer is None:
                print(f"  dask: child failed (exit {code})")
            else:
                _print_ratio("dask", answer, peak)
            return
        for p in args.sizes:
            print(f"p = {p}, n = {args.n} (load {_load()}; launcher {_launcher_peak():.0f} MB)",
                  flush=True)
            if not args.no_memory:
                answer, peak, code = _run_child(me + ["memory", str(p), str(args.n),
                                                      str(args.rho)])
                if answer is None:
                    print(f"  memory: child failed (exit {code})")
                else:
                    _print_ratio("memory", answer, peak)
            if args.csv:
                path = work / f"wide-{p}.csv"
                _make(me, "write-csv", p, args.n, str(path))
                answer, peak, code = _fit_and_floor(me, "csv", "csv-floor", p, args.n,
                                                    args.rho, path)
                path.unlink()
                if answer is None:
                    print(f"  csv: child failed (exit {code})")
                else:
                    _print_ratio("csv", answer, peak)


if __name__ == "__main__":
    main()
