"""Seeded PrivateGraph fits whose outputs are pinned (``pinned_fits.npz``).

The fixture was written by this module from the code *before* the speed work on the main job
(``python tests/pinned_fits.py`` on that commit): a seeded plan, release and record must stay
identical whatever is made faster, and the inference table equal to 1e-10. Only continuous
columns are used: a change of the range step for discrete columns is a change of method, not
of speed, and would be pinned by its own tests.

Run ``PYTHONPATH=src python tests/pinned_fits.py`` to rewrite the fixture (only when a
change of the numbers is intended, and say so in the commit). Rewritten after the
graphical lasso's continuation start and the refit's pair repair: every release and record
bit for bit as before; the converged inference within 3e-5; ``chain40-approx`` (a release
with noisy correlations beyond +-1 on the pilot's support) changed as its repair intends.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np

FIXTURE = Path(__file__).with_name("pinned_fits.npz")

#: (name, data, options): small seeded fits over the main job's branches.
CASES = (
    ("chain10-zcdp", dict(n=4000, p=10, seed=1, missing=0.0),
     dict(budget=("zcdp", 1.0))),
    ("chain30-zcdp", dict(n=6000, p=30, seed=2, missing=0.0),
     dict(budget=("zcdp", 0.5))),
    ("chain40-approx", dict(n=5000, p=40, seed=3, missing=0.0),
     dict(budget=("approx", 2.0, 1e-6))),
    ("chain12-pure", dict(n=8000, p=12, seed=4, missing=0.0),
     dict(budget=("pure", 3.0))),
    ("chain15-missing", dict(n=5000, p=15, seed=5, missing=0.1),
     dict(budget=("zcdp", 1.0))),
    ("chain20-threshold", dict(n=4000, p=20, seed=6, missing=0.0),
     dict(budget=("zcdp", 1.0), select="threshold")),
    ("chain8-declared", dict(n=3000, p=8, seed=7, missing=0.0, standard=True),
     dict(budget=("zcdp", 1.0), bounds="l2:4", center="none")),
    ("chain25-by", dict(n=4000, p=25, seed=8, missing=0.0),
     dict(budget=("zcdp", 2.0), fdr_method="by", planned_missing_share=0.05)),
)

#: The numeric columns of ``inference_`` that are pinned.
INFERENCE_NUMBERS = ("partial_correlation", "ci_low", "ci_high", "p_value", "q_value")
#: And of the pairs' inference (in the order of ``triu_indices``), beyond the table.
PAIR_NUMBERS = ("std_error", "null_std_error", "noise_share")


def _budget(spec):
    from dpggm import ZCDP, ApproxDP, PureDP

    kind, *values = spec
    return {"zcdp": ZCDP, "approx": ApproxDP, "pure": PureDP}[kind](*values)


def _data(n: int, p: int, seed: int, missing: float, standard: bool = False):
    from dpggm.datasets import make_raw_chain

    frame, _ = make_raw_chain(n_samples=n, n_features=p, random_state=seed)
    if standard:
        frame = (frame - frame.mean()) / frame.std()
    if missing > 0:
        rng = np.random.default_rng(seed + 100)
        frame = frame.mask(rng.random(frame.shape) < missing)
    return frame


def _inference_sorted(graph) -> dict[str, np.ndarray]:
    table = graph.inference_
    columns = list(graph.feature_names_in_)
    index = {name: j for j, name in enumerate(columns)}
    source = table["source"].map(index).to_numpy()
    target = table["target"].map(index).to_numpy()
    order = np.lexsort((target, source))
    out = {"pairs": np.stack([source[order], target[order]])}
    for name in INFERENCE_NUMBERS:
        out[name] = table[name].to_numpy(dtype=float)[order]
    out["selected"] = table["selected"].to_numpy(dtype=bool)[order]
    inference = graph._inference
    for name in PAIR_NUMBERS:
        out[name] = np.asarray(getattr(inference, name), dtype=float)
    out["debiased_precision"] = inference.debiased_precision
    out["pilot_precision"] = inference.pilot_precision
    return out


def fit_case(data: dict, options: dict):
    from dpggm import PrivateGraph

    options = dict(options)
    budget = _budget(options.pop("budget"))
    frame = _data(**data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivateGraph(budget=budget, random_state=data["seed"] * 7 + 3,
                            **options).fit(frame)


def outputs(graph) -> dict[str, np.ndarray]:
    """Every pinned output of a fit, as arrays."""
    from dpggm.estimators.graph import graph_result_record

    out: dict[str, np.ndarray] = {
        "noisy_covariance": graph.noisy_covariance_,
        "covariance": graph.covariance_,
        "precision": graph.precision_,
        "adjacency": graph.adjacency_,
        "alpha": np.array(graph.alpha_),
        "entry_noise_std": np.array(graph.entry_noise_std_),
    }
    if graph.mean_ is not None:
        out["mean"] = graph.mean_
    if graph.ranges_ is not None:
        out["ranges_lower"] = graph.ranges_.lower
        out["ranges_upper"] = graph.ranges_.upper
    if graph.norm_bound_ is not None:
        out["norm_bound"] = np.array(graph.norm_bound_.bound)
    if graph.release_ is not None and graph.release_.present is not None:
        out["present"] = graph.release_.present
    for name, values in _inference_sorted(graph).items():
        out["inference_" + name] = values
    edges = graph.edges_
    out["edges"] = edges[["source", "target"]].to_numpy(dtype=str)
    for name in ("weight", "partial_correlation", "ci_low", "ci_high", "q_value"):
        if name in edges:
            out["edges_" + name] = edges[name].to_numpy(dtype=float)
    record = graph_result_record(graph)
    out["record"] = np.array(json.dumps(record, sort_keys=True, default=str))
    return out


def compute() -> dict[str, np.ndarray]:
    pinned: dict[str, np.ndarray] = {}
    for name, data, options in CASES:
        for key, value in outputs(fit_case(data, options)).items():
            pinned[f"{name}/{key}"] = np.asarray(value)
    return pinned


if __name__ == "__main__":
    np.savez_compressed(FIXTURE, **compute())
    print(f"wrote {FIXTURE}")
