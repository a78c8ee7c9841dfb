"""How often the default private ranges squeeze a skewed questionnaire item onto one value.

A questionnaire export of 20 Likert items (8 of them with 79-82 % of the answers on one
level, :func:`dpggm.datasets.make_questionnaire_export`), fitted with ``PrivateGraph``'s
defaults (``bounds="auto"``) under seeds 0..N-1. For each fit: the largest share of any
item's rows outside its private range. Prints the fits with an item over 5 % outside, the
count, and the plan's stated untied share (the columns it promises to keep apart).

Run on demand::

    python3 benchmarks/bench_tied_items.py --fits 40 --rows 2000 --rho 1
"""

from __future__ import annotations

import argparse
import tempfile
import warnings

import numpy as np

from dpggm import ZCDP, PrivateGraph
from dpggm.datasets import make_questionnaire_export


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=40)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--rho", type=float, default=1.0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    export = make_questionnaire_export(tempfile.mkdtemp(), n_respondents=args.rows,
                                       random_state=0, formats=("csv",))
    X = export.answers[export.items]
    modal = {c: float(X[c].dropna().value_counts(normalize=True).iloc[0]) for c in X}
    plan = PrivateGraph(budget=ZCDP(args.rho)).plan(n_samples=len(X), n_features=X.shape[1])
    print(f"{len(X)} answers x {X.shape[1]} items, rho = {args.rho}; bound share "
          f"{plan.notes.get('bound_fraction')}; the plan keeps levels apart from an untied "
          f"share of {plan.notes.get('tied_columns_keep_levels_from_untied_share')}")
    squeezed = 0
    for seed in range(args.fits):
        graph = PrivateGraph(budget=ZCDP(args.rho), random_state=seed).fit(X)
        ranges = graph.privacy_.bounds["ranges"]
        lower, upper = np.array(ranges["lower"]), np.array(ranges["upper"])
        outside = ((X < lower) | (X > upper)).mean().to_numpy()
        worst = int(np.argmax(outside))
        if outside[worst] > 0.05:
            squeezed += 1
            item = X.columns[worst]
            print(f"  seed {seed}: {item} ({100 * modal[item]:.0f} % on one level) range "
                  f"[{lower[worst]:.4g}, {upper[worst]:.4g}], {100 * outside[worst]:.1f} % "
                  "of its rows outside")
    print(f"fits with an item over 5 % outside its range: {squeezed} of {args.fits}")


if __name__ == "__main__":
    main()
