"""Fill the tables of docs/reproduction.md from the experiments' CSV files.

The page is rendered from the template ``reproduction.md.in``. Every table sits between
``<!-- BEGIN table:NAME -->`` and ``<!-- END table:NAME -->``; this script fills it with the
table NAME built from ``docs/reproduction/<run>/*.csv`` (the files the runs wrote) and the
papers' published numbers (below, and ``paper_private_precision_tables.csv``, parsed from the
paper's text). Every figure in the prose is a ``{{name}}`` of the template, computed the same
way (``values()``), and so is every constant the prose names (tolerances, the agreement
level, the papers' repetitions, the CI check's constants): the prose types none of them.

Usage::

    python3 docs/reproduction/build_tables.py        # rewrites docs/reproduction.md
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
PAGE = HERE.parent / "reproduction.md"

# Wang, Huai & Xu, Tables 1-2, synthetic columns (r = n/p); "NA" is the paper's "above 200".
PAPER_COVARIANCE_PERTURBATION = {
    ("epsilon-DP", "Wishart-pure (Jiang et al.)"): {
        0.5: ("0.993", "0.9918", "0.9914"), 1.0: ("0.986", "0.9863", "0.9856"),
        1.5: ("0.9817", "0.9815", "0.9806")},
    ("epsilon-DP", "Output perturbation (Alg. 1)"): {
        0.5: ("NA", "NA", "NA"), 1.0: ("NA", "NA", "NA"), 1.5: ("NA", "NA", "NA")},
    ("epsilon-DP", "Laplace"): {
        0.5: ("101.4", "52.85", "35.42"), 1.0: ("49.44", "25.41", "16.83"),
        1.5: ("32.30", "16.41", "10.76")},
    ("approx", "Wishart (Sheffet)"): {
        0.5: ("0.9999", "0.9997", "0.9993"), 1.0: ("0.9982", "0.9947", "0.9906"),
        1.5: ("0.9954", "0.9895", "0.9837")},
    ("approx", "SULQ"): {
        0.5: ("NA", "NA", "NA"), 1.0: ("NA", "NA", "NA"), 1.5: ("NA", "NA", "NA")},
    ("approx", "Gaussian"): {
        0.5: ("0.1285", "0.1607", "0.1759"), 1.0: ("0.1254", "0.1605", "0.1737"),
        1.5: ("0.1242", "0.1585", "0.1701")},
}
# Ferrando et al.: BreastCancerWisconsin (d = 32 in the paper), Table 4 (measured off-diagonal
# entries per trial) and Table 5 (seconds per trial, mean ± SE).
PAPER_PACE_GGM_MEASURED = {1e-4: 5.2, 1e-3: 5.6, 1e-2: 6.1, 0.1: 9.4, 1.0: 23.9, 2.0: 27.5, 10.0: 49.0}
PAPER_PACE_GGM_SECONDS = {1e-4: "0.19 ± 0.02", 1e-2: "0.20 ± 0.03", 1.0: "0.90 ± 0.17",
                     10.0: "1.78 ± 0.15"}
# Ferrando et al., Table 3 (BreastCancerWisconsin): d, n, mean |r|, max |r|, e_off, rank_eff.
PAPER_PACE_GGM_STRUCTURE = (32, 569, 0.383, 1.000, 0.739, 5.5)
# The tolerances of the summary table: ours, not derived from either paper's error (the
# page names them from here).
RELATIVE_TOLERANCE = {"private_precision": 0.25, "covariance_perturbation": 0.25, "pace_ggm": 0.30}
#: Wang, Huai & Xu's convention: "NA" is a relative error above this.
NA_ABOVE = 200
#: The papers' repetitions per cell (Wang, Huai & Xu reports one run); a paper's standard
#: deviation over them is divided by their square root to give its standard error.
PAPER_REPS = {"private_precision": 50, "covariance_perturbation": 1, "noisy_data": 10,
              "pace_ggm": 10, "thresholding": 20}
#: Guo et al., Table 1(b): the model's number of nodes (its edges are the off-diagonal
#: pairs times one minus the sparsity).
NOISY_DATA_1B_NODES = 1000
# Variant keys of the runs' CSV files: Ferrando et al. with all of the paper's choices, and
# Guo et al.'s Table 1(b) with a penalty factor chosen after seeing the variants (its key,
# written before that was said, is not a label the page uses).
PACE_GGM_PAPER_CHOICES = "all of the paper's choices at once"
NOISY_DATA_POST_HOC = "like for like: penalty factor 0.1, the paper's diagonal"
# How the page names a variant whose key (in the runs' CSV files) says more than it is.
VARIANT_LABELS = {NOISY_DATA_POST_HOC: "the paper's diagonal with the penalty factor 0.1 "
                                    "(chosen after seeing the variants above)"}


def fmt(value: float, digits: int = 3) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:.{digits}g}"


def mean_se(mean: float, se: float, digits: int = 3) -> str:
    if not math.isfinite(mean):
        return "no solution"
    if not math.isfinite(se):
        return fmt(mean, digits)
    return f"{fmt(mean, digits)} ({fmt(se, 2)})"


def markdown(frame: pd.DataFrame) -> str:
    columns = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join(" --- " for _ in columns) + "|"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(str(v) for v in row) + " |")
    return "\n".join(lines)


def _reps_of(frame: pd.DataFrame) -> str:
    """The repetitions per cell of ``frame`` ("3", or "3/5" when they differ)."""
    return "/".join(str(v) for v in sorted(set(int(v) for v in frame["n_reps"])))


def read(seed: str, name: str) -> pd.DataFrame | None:
    path = HERE / seed / name
    return pd.read_csv(path) if path.exists() else None


def read_runs(seed: str, name: str) -> pd.DataFrame | None:
    """``name`` from every run of ``seed`` (``seedNNN/`` and ``seedNNN_*/``, e.g. one run per
    ratio), concatenated."""
    frames = [pd.read_csv(path) for path in sorted(HERE.glob(f"{seed}*/{name}"))]
    return pd.concat(frames, ignore_index=True) if frames else None


def environment(run: str) -> str:
    found = sorted((HERE / run).glob("*_environment.csv"))
    if len(found) != 1:
        return "*(not run)*"
    frame = pd.read_csv(found[0])
    info = dict(zip(frame["key"], frame["value"].astype(str)))
    minutes = float(info["wall_seconds"]) / 60
    return markdown(pd.DataFrame({
        "": ["command", "wall time", "started (UTC)", "seed", "dpggm / numpy / scipy / "
             "scikit-learn / pandas", "Python, platform", "CPUs"],
        "value": [
            # Python names an inline program "-c"; the section shows the full call.
            "`python3 -c …` (shown above)" if info["command"] == "-c" else f"`{info['command']}`",
            f"{float(info['wall_seconds']):.0f} s ({minutes:.1f} min)",
            info["started_utc"],
            info["random_state"],
            " / ".join(info[k] for k in ("dpggm", "numpy", "scipy", "scikit-learn", "pandas")),
            f"{info['python']}, {info['platform']}",
            f"{info['cpus_available']} of {info['cpu_count']} (shared with other jobs)",
        ],
    }))


# ------------------------------------------------------------------ Su, Guo & Zhang


def private_precision(algorithm: str, model: int) -> str:
    """One model of the paper's Table 1 (DP-RP) or Table 2 (DP-AGL): ours beside the
    paper's, per norm."""
    errors = read("private_precision", "private_precision_errors.csv")
    if errors is None:
        return "*(not run)*"
    paper = pd.read_csv(HERE / "paper_private_precision_tables.csv")
    table = "1" if algorithm == "DP-RP" else "2"
    paper = paper[(paper["table"].astype(str) == table) & (paper["model"] == model)]
    ours = errors[(errors["method"] == algorithm) & (errors["model"] == model)]
    if algorithm == "DP-AGL":
        ours = ours[ours["penalty"] == AGL_PENALTY]
    rows = []
    for _, cell in ours.iterrows():
        row = {"n": int(cell["n"]), "ε": f"{cell['epsilon']:g}"}
        for norm, label in (("l1", "ℓ1"), ("fro", "F"), ("spectral", "ℓ2")):
            published = paper[(paper["n"] == cell["n"]) & (paper["epsilon"] == cell["epsilon"])
                              & (paper["norm"] == norm)]
            row[f"{label} ours"] = mean_se(cell[f"rel_{norm}_mean"], cell[f"rel_{norm}_se"])
            row[f"{label} **paper**"] = (
                mean_se(float(published["mean"].iloc[0]), float(published["se"].iloc[0]))
                if len(published) else "–"
            )
        if algorithm == "DP-AGL":
            row["repaired"] = f"{int(cell['n_repaired'])}/{int(cell['n_reps'])}"
            small = errors[(errors["method"] == algorithm) & (errors["model"] == model)
                           & (errors["penalty"] == AGL_SMALL_PENALTY)
                           & (errors["n"] == cell["n"]) & (errors["epsilon"] == cell["epsilon"])]
            row["F ours, α = B²/p"] = (mean_se(small["rel_fro_mean"].iloc[0],
                                               small["rel_fro_se"].iloc[0]) if len(small) else "–")
        rows.append(row)
    return markdown(pd.DataFrame(rows))


AGL_PENALTY = "alpha=10*B^2/p"
RAW_AGL = "DP-AGL raw release (paper)"
AGL_SMALL_PENALTY = "alpha=1*B^2/p"


def _within(ours: float, paper: float, tolerance: float) -> bool:
    """``ours`` within ``tolerance`` (a share) of ``paper``."""
    return bool(math.isfinite(ours) and paper > 0 and abs(ours / paper - 1) <= tolerance)


def _paper_private_precision() -> pd.DataFrame:
    return pd.read_csv(HERE / "paper_private_precision_tables.csv")


def _private_precision_pairs(frame: pd.DataFrame, algorithm: str) -> list[tuple[float, float, str]]:
    """(ours, paper, norm) for every cell of the paper's Table 1 (DP-RP) or 2 (DP-AGL)
    that ``frame`` (rows of one method) has."""
    paper = _paper_private_precision()
    paper = paper[paper["table"].astype(str) == ("1" if algorithm == "DP-RP" else "2")]
    pairs = []
    for _, cell in paper.iterrows():
        ours = frame[(frame["model"] == cell["model"]) & (frame["n"] == cell["n"])
                     & (frame["epsilon"] == cell["epsilon"])]
        if len(ours):
            pairs.append((float(ours[f"rel_{cell['norm']}_mean"].iloc[0]), float(cell["mean"]),
                          str(cell["norm"])))
    return pairs


def _private_precision_honest(algorithm: str) -> pd.DataFrame | None:
    errors = read("private_precision", "private_precision_errors.csv")
    if errors is None:
        return None
    ours = errors[errors["method"] == algorithm]
    return ours[ours["penalty"] == AGL_PENALTY] if algorithm == "DP-AGL" else ours


def _private_precision_step(step: str, algorithm: str) -> pd.DataFrame | None:
    frame = read("private_precision_paper", "private_precision_paper_setting.csv")
    if frame is None:
        return None
    return frame[(frame["setting"] == step) & (frame["method"] == algorithm)]


def private_precision_paper(algorithm: str) -> str:
    """The paper's setting beside the paper, one row per cell (for DP-AGL, not its algorithm)."""
    ours = _private_precision_step("paper", algorithm)
    if ours is None:
        return "*(not run)*"
    paper = _paper_private_precision()
    paper = paper[paper["table"].astype(str) == ("1" if algorithm == "DP-RP" else "2")]
    rows = []
    for model in sorted(set(paper["model"])):
        for _, cell in ours[ours["model"] == model].iterrows():
            row = {"model": model, "n": int(cell["n"]), "ε": f"{cell['epsilon']:g}"}
            for norm, label in (("l1", "ℓ1"), ("fro", "F"), ("spectral", "ℓ2")):
                published = paper[(paper["model"] == model) & (paper["n"] == cell["n"])
                                  & (paper["epsilon"] == cell["epsilon"]) & (paper["norm"] == norm)]
                row[f"{label} paper's setting"] = mean_se(cell[f"rel_{norm}_mean"],
                                                        cell[f"rel_{norm}_se"])
                row[f"{label} **paper**"] = mean_se(float(published["mean"].iloc[0]),
                                                    float(published["se"].iloc[0]))
            row["penalty (CV)"] = fmt(cell["penalty_value_mean"])
            row["σ"] = fmt(cell["sigma_mean"])
            if algorithm == "DP-AGL":
                reps = int(cell["n_reps"])
                row["raw release: no solution"] = f"{int(cell['n_raw_failed'])}/{reps}"
            rows.append(row)
    return markdown(pd.DataFrame(rows))


def private_precision_steps() -> str:
    """From the honest run to the paper's setting, one step at a time: the median ratio of
    our error to the paper's and the share of cells within the tolerance."""
    tolerance = RELATIVE_TOLERANCE["private_precision"]
    steps = [("honest (the tables above)", None), ("1. + data-max normalisation", "data-max"),
             ("2. + cross-validated penalties", "data-max+cv"),
             ("3. + the classical formula's noise (the paper's setting)", "paper")]
    rows = []
    for label, step in steps:
        row = {"step": label}
        for algorithm, table in (("DP-RP", "Table 1"), ("DP-AGL", "Table 2")):
            frame = (_private_precision_honest(algorithm) if step is None
                     else _private_precision_step(step, algorithm))
            pairs = [] if frame is None else _private_precision_pairs(frame, algorithm)
            if not pairs:
                return "*(not run)*"
            for norm, label_norm in (("l1", "ℓ1"), ("fro", "F"), ("spectral", "ℓ2")):
                ratios = [o / q for o, q, n in pairs if n == norm]
                row[f"{table} {label_norm}: median ours/paper"] = fmt(float(np.median(ratios)))
            within = sum(_within(o, q, tolerance) for o, q, _ in pairs)
            row[f"{table}: within ±{100 * tolerance:g} %"] = f"{within}/{len(pairs)}"
        rows.append(row)
    return markdown(pd.DataFrame(rows))


def _private_precision_in_original_units(frame: pd.DataFrame, algorithm: str,
                                step: str | None) -> pd.DataFrame:
    """Per cell (model, n, ε): the noise σ and the penalty in the units of the data as
    sampled, and the relative Frobenius error (relative errors do not depend on the
    scale). The paper's setting divides the records by the sample's largest row norm
    ``m``: a noise σ there is ``σ m²`` in the data's units, a ridge penalty ``λ m⁴``
    (the ridge's ``v²``), a graphical-lasso penalty ``α m²``."""
    scale = 1.0 if step is None else frame["data_max_row_norm_mean"]
    penalty_power = 4 if algorithm == "DP-RP" else 2
    return pd.DataFrame({
        "model": frame["model"], "n": frame["n"], "epsilon": frame["epsilon"],
        "sigma": frame["sigma_mean"] * scale**2,
        "penalty": frame["penalty_value_mean"] * scale**penalty_power,
        "fro": frame["rel_fro_mean"],
    })


PRIVATE_PRECISION_STEPS = (("1. data-max normalisation", "data-max"),
                 ("2. cross-validated penalties", "data-max+cv"),
                 ("3. the classical formula's noise", "paper"))


def private_precision_causes() -> str:
    """What each step to the paper's setting changes, cell by cell (the paper's models,
    every n and ε): the noise and the penalty in the data's units and the Frobenius
    error, each as the median (range) of its ratio to the previous step's."""
    rows = []
    for algorithm, table in (("DP-RP", "Table 1"), ("DP-AGL", "Table 2")):
        paper = _paper_private_precision()
        paper_models = set(paper.loc[paper["table"].astype(str) == table[-1], "model"])
        previous = _private_precision_honest(algorithm)
        if previous is None:
            return "*(not run)*"
        previous = _private_precision_in_original_units(previous, algorithm, None)
        for label, step in PRIVATE_PRECISION_STEPS:
            frame = _private_precision_step(step, algorithm)
            if frame is None or not len(frame):
                return "*(not run)*"
            current = _private_precision_in_original_units(frame, algorithm, step)
            both = previous.merge(current, on=["model", "n", "epsilon"],
                                  suffixes=("_before", "_after"))
            both = both[both["model"].isin(paper_models)]
            row = {"table": f"{table} ({algorithm})", "step": label, "cells": len(both)}
            for column, name in (("sigma", "noise σ"), ("penalty", "penalty"),
                                 ("fro", "Frobenius error")):
                ratio = (both[f"{column}_after"] / both[f"{column}_before"]).to_numpy(float)
                ratio = ratio[np.isfinite(ratio)]
                row[f"{name} ×"] = (f"{fmt(float(np.median(ratio)))} ({fmt(float(ratio.min()), 2)}"
                                    f"–{fmt(float(ratio.max()), 2)})")
            rows.append(row)
            previous = current
    return markdown(pd.DataFrame(rows))


def private_precision_raw() -> str:
    """The paper's own DP-AGL pipeline (the graphical lasso on the raw release): how often
    it had a solution, per model and penalty."""
    errors = read("private_precision", "private_precision_errors.csv")
    if errors is None:
        return "*(not run)*"
    raw = errors[errors["method"] == "DP-AGL raw release (paper)"]
    rows = []
    for (penalty, model), group in raw.groupby(["penalty", "model"], sort=False):
        rows.append({
            "penalty": penalty, "model": model,
            "releases without a solution": f"{int(group['n_failed'].sum())} of "
                                            f"{int(group['n_reps'].sum())}",
        })
    return markdown(pd.DataFrame(rows))


def private_precision_trend() -> str:
    trend = read("private_precision", "private_precision_trend.csv")
    if trend is None:
        return "*(not run)*"
    trend = trend[trend["norm"] == "fro"]
    rows = [{"method": r["method"], "penalty": r["penalty"], "model": r["model"],
             "slope vs n·ε (expected −1)": fmt(r["slope_vs_n_epsilon"]),
             "slope vs σ (expected +1)": fmt(r["slope_vs_sigma"]), "cells": r["n_cells"]}
            for _, r in trend.iterrows()]
    return markdown(pd.DataFrame(rows))


def private_precision_roc() -> str:
    auc = read("private_precision", "private_precision_roc_auc.csv")
    if auc is None:
        return "*(not run)*"
    rows = [{"model": r["model"], "budget": r["budget"],
             "edge AUC ours": mean_se(r["auc_mean"], r["auc_se"]),
             "repetitions": int(r["n_reps"])} for _, r in auc.iterrows()]
    return markdown(pd.DataFrame(rows))


def private_precision_settings() -> str:
    settings = read("private_precision", "private_precision_settings.csv")
    if settings is None:
        return "*(not run)*"
    rows = [{"model": r["model"], "p": r["p"], "declared row bound B": fmt(r["row_bound_B"]),
             "rows clipped": f"{100 * r['clipped_fraction_mean']:.2f} %",
             "ridge": fmt(r["ridge"])} for _, r in settings.iterrows()]
    return markdown(pd.DataFrame(rows))


# ------------------------------------------------------------------ Wang, Huai & Xu


SHEFFET = "Wishart (Sheffet)"


def _covariance_perturbation_cell(cell: pd.Series | None, method: str, epsilon: float) -> str:
    if cell is None:
        # The errors table leaves out what was not run: Sheffet's mechanism at ε ≥ 1.
        return "n/a (ε ≥ 1)" if method == SHEFFET and epsilon >= 1 else "–"
    if not math.isfinite(cell["rel_fro_mean"]):
        return f"no solution ({int(cell['n_failed'])}/{int(cell['n_reps'])})"
    if cell["rel_fro_mean"] > NA_ABOVE:
        text = f"NA (> {NA_ABOVE})"
    else:
        text = mean_se(cell["rel_fro_mean"], cell["rel_fro_se"], 4)
    if cell["n_failed"]:
        text += f" [{int(cell['n_failed'])} no solution]"
    return text


def covariance_perturbation(family: str) -> str:
    errors = read_runs("covariance_perturbation", "covariance_perturbation_errors.csv")
    if errors is None:
        return "*(not run)*"
    key = "epsilon-DP" if family == "pure" else "approx"
    subset = errors[(errors["family"] == "epsilon-DP") == (family == "pure")]
    # Only the ratios that were run; the paper's others have no counterpart.
    ratios = sorted(set(subset["r"].astype(float)))
    methods = list(dict.fromkeys(subset["method"]))
    if family != "pure" and SHEFFET not in methods:
        methods.append(SHEFFET)
    rows = []
    for epsilon in sorted(set(subset["epsilon"].astype(float))):
        for method in methods:
            row = {"ε": f"{epsilon:g}", "method": method}
            published = PAPER_COVARIANCE_PERTURBATION.get((key, method), {}).get(epsilon, ("–",) * 3)
            for ratio in ratios:
                for post, label in (("library repair", "ours"), ("none (paper)", "ours, raw")):
                    found = subset[(subset["epsilon"] == epsilon) & (subset["method"] == method)
                                   & (subset["r"] == ratio) & (subset["postprocessing"] == post)]
                    row[f"r={ratio:g} {label}"] = _covariance_perturbation_cell(
                        found.iloc[0] if len(found) else None, method, epsilon
                    )
                if ratio in (0.5, 1.0, 1.5):
                    row[f"r={ratio:g} **paper**"] = published[(0.5, 1.0, 1.5).index(ratio)]
            rows.append(row)
    return markdown(pd.DataFrame(rows))


# ------------------------------------------------------------------ Guo et al.


def noisy_data(table: str) -> str:
    # A run of one table alone (noisy_data_1a/) replaces that table of the run of both.
    frame = read(f"noisy_data_{table}", f"noisy_data_table_{table}.csv")
    if frame is None:
        frame = read("noisy_data", f"noisy_data_table_{table}.csv")
    if frame is None:
        return "*(not run)*"
    key = "n" if table == "1a" else "sparsity"
    like = _noisy_data_post_hoc() if table == "1b" else None
    rows = []
    for _, r in frame.iterrows():
        row = {key: (int(r[key]) if key == "n" else f"{100 * r[key]:g} %"), "noise": r["noise"],
               "AUC corrected": mean_se(r["auc_corrected_mean"], r["auc_corrected_sd"]),
               "AUC uncorrected": mean_se(r["auc_uncorrected_mean"], r["auc_uncorrected_sd"])}
        if "auc_gwishart_mean" in frame:
            row["AUC G-Wishart"] = mean_se(r["auc_gwishart_mean"], r["auc_gwishart_sd"])
        if "auc_reference_corrected_mean" in frame:
            row["AUC paper's scoring"] = mean_se(
                r["auc_reference_corrected_mean"], r["auc_reference_corrected_sd"])
        if like is not None:
            found = like[(like["sparsity"] == r["sparsity"]) & (like["noise"] == r["noise"])]
            row["AUC paper's diagonal, factor 0.1 (post hoc)"] = (
                f"{mean_se(found['auc_mean'].iloc[0], found['auc_sd'].iloc[0])}, "
                f"{int(found['n_reps'].iloc[0])} reps" if len(found) else "–")
        row["AUC **paper**"] = fmt(r["auc_paper"])
        if r["noise"] != "no noise":
            row["ε honest (δ=1e-5)"] = fmt(r["epsilon_honest_mean"])
            row["ε paper accounting"] = fmt(r["epsilon_paper_mean"])
        else:
            row["ε honest (δ=1e-5)"] = row["ε paper accounting"] = "–"
        row["reps"] = int(r["n_reps"])
        rows.append(row)
    return markdown(pd.DataFrame(rows))


def _noisy_data_model_edges(sparsity: float) -> int:
    """The edges of Table 1(b)'s model at ``sparsity`` (a share of the off-diagonal pairs)."""
    pairs = NOISY_DATA_1B_NODES * (NOISY_DATA_1B_NODES - 1) // 2
    return round((1 - float(sparsity)) * pairs)


def _noisy_data_variants() -> pd.DataFrame | None:
    return read("noisy_data_1b_variants", "noisy_data_1b_variants.csv")


def _noisy_data_post_hoc() -> pd.DataFrame | None:
    variants = _noisy_data_variants()
    return None if variants is None else variants[variants["variant"] == NOISY_DATA_POST_HOC]


def noisy_data_causes() -> str:
    """Table 1(b) without noise: what the penalty and the diagonal do to the AUC."""
    variants = _noisy_data_variants()
    if variants is None:
        return "*(not run)*"
    clean = variants[variants["noise"] == "no noise"]
    sparsities = list(dict.fromkeys(clean["sparsity"]))
    edges_label = (f"edges kept at {100 * sparsities[-1]:g} % "
                   f"(model: {_noisy_data_model_edges(sparsities[-1]):,})")
    rows = []
    for variant, group in clean.groupby("variant", sort=False):
        row = {"variant": VARIANT_LABELS.get(variant, variant)}
        for sparsity in sparsities:
            cell = group[group["sparsity"] == sparsity].iloc[0]
            row[f"{100 * sparsity:g} %"] = mean_se(cell["auc_mean"], cell["auc_sd"])
        edges = group.loc[group["sparsity"] == sparsities[-1], "edges_mean"].iloc[0]
        row[edges_label] = f"{edges:,.0f}"
        row["reps"] = int(group["n_reps"].iloc[0])
        rows.append(row)
    paper = {"variant": "**paper**"}
    for sparsity in sparsities:
        paper[f"{100 * sparsity:g} %"] = fmt(clean.loc[clean["sparsity"] == sparsity,
                                                       "auc_paper"].iloc[0])
    paper[edges_label] = "–"
    paper["reps"] = PAPER_REPS["noisy_data"]
    rows.append(paper)
    return markdown(pd.DataFrame(rows))


# ------------------------------------------------------------------ Ferrando et al.


def pace_ggm_measured() -> str:
    measured = read("pace_ggm", "pace_ggm_measured.csv")
    runtime = read("pace_ggm", "pace_ggm_runtime.csv")
    if measured is None or runtime is None:
        return "*(not run)*"
    bc = measured[measured["dataset"] == "breast_cancer"]
    rt = runtime[(runtime["dataset"] == "breast_cancer") & (runtime["method"] == "pace")]
    like = _pace_ggm_variant(PACE_GGM_PAPER_CHOICES)
    d = int(bc["d"].iloc[0])
    rows = []
    for _, r in bc.iterrows():
        rho = float(r["rho"])
        seconds = rt[rt["rho"] == r["rho"]].iloc[0]
        paper = PAPER_PACE_GGM_MEASURED.get(rho, math.nan)
        row = {
            "ρ": f"{rho:g}",
            f"off-diagonal measured, ours (d = {d}, {_reps_of(bc)} trials)": mean_se(
                r["measured_offdiag_mean"], r["measured_offdiag_se"]),
        }
        if like is not None:
            found = like[like["rho"] == r["rho"]].iloc[0]
            row[f"paper's choices (d = 32, {int(found['n_reps'])} trials)"] = mean_se(
                found["measured_offdiag_mean"], found["measured_offdiag_se"])
        row[f"**paper** (d = {PAPER_PACE_GGM_STRUCTURE[0]}, {PAPER_REPS['pace_ggm']} trials)"] = (
            fmt(paper))
        row["ours / paper"] = fmt(r["measured_offdiag_mean"] / paper)
        row["seconds per fit, ours"] = mean_se(seconds["seconds_mean"], seconds["seconds_se"])
        row["**paper** seconds"] = PAPER_PACE_GGM_SECONDS.get(rho, "–")
        rows.append(row)
    return markdown(pd.DataFrame(rows))


def _pace_ggm_variant(variant: str) -> pd.DataFrame | None:
    variants = read("pace_ggm_variants", "pace_ggm_variants.csv")
    return None if variants is None else variants[variants["variant"] == variant]


def pace_ggm_variants() -> str:
    """Measured off-diagonal entries on breast cancer, one change at a time."""
    variants = read("pace_ggm_variants", "pace_ggm_variants.csv")
    if variants is None:
        return "*(not run)*"
    rhos = list(dict.fromkeys(variants["rho"]))
    rows = []
    for variant, group in variants.groupby("variant", sort=False):
        row = {"variant": variant, "d": int(group["d"].iloc[0])}
        for rho in rhos:
            cell = group[group["rho"] == rho].iloc[0]
            text = mean_se(cell["measured_offdiag_mean"], cell["measured_offdiag_se"], 3)
            if cell["n_failed"]:
                text += f" [{int(cell['n_failed'])} failed]"
            row[f"ρ={rho:g}"] = text
        rows.append(row)
    paper = {"variant": f"**paper** ({PAPER_REPS['pace_ggm']} trials)",
             "d": PAPER_PACE_GGM_STRUCTURE[0]}
    for rho in rhos:
        paper[f"ρ={rho:g}"] = fmt(PAPER_PACE_GGM_MEASURED.get(float(rho), math.nan))
    rows.append(paper)
    return markdown(pd.DataFrame(rows))


def pace_ggm_structure() -> str:
    """The paper's Table 3 properties of the breast cancer data, ours beside the paper's."""
    structure = read("pace_ggm_variants", "pace_ggm_structure.csv")
    if structure is None:
        return "*(not run)*"
    shown = ("as run: d = 31, centered, clipped", "no diagnosis column (d = 30)",
             "record id as a 32nd column (d = 32)")
    rows = []
    for _, r in structure[structure["variant"].isin(shown)].iterrows():
        rows.append({
            "data": r["variant"], "d": int(r["d"]), "n": int(r["n"]),
            "mean abs(r)": fmt(r["mean_abs_r_before_clipping"]),
            "max abs(r)": fmt(r["max_abs_r_before_clipping"], 4),
            "e_off": fmt(r["e_off_before_clipping"]),
            "rank_eff": fmt(r["rank_eff_before_clipping"]),
            "e_off after clipping": fmt(r["e_off_as_used"]),
            "values clipped": f"{100 * r['outside_box_after_centering']:.1f} %",
        })
    d, n, mean_r, max_r, e_off, rank_eff = PAPER_PACE_GGM_STRUCTURE
    rows.append({"data": "**paper** (BreastCancerWisconsin)", "d": d, "n": n,
                 "mean abs(r)": fmt(mean_r), "max abs(r)": f"{max_r:.3f}", "e_off": fmt(e_off),
                 "rank_eff": fmt(rank_eff), "e_off after clipping": "–", "values clipped": "–"})
    return markdown(pd.DataFrame(rows))


def pace_ggm_other_measured() -> str:
    measured = read("pace_ggm", "pace_ggm_measured.csv")
    if measured is None:
        return "*(not run)*"
    others = measured[measured["dataset"] != "breast_cancer"]
    wide = others.pivot_table(index=["dataset", "d"], columns="rho", values="measured_offdiag_mean",
                              sort=False).reset_index()
    wide.columns = [c if not isinstance(c, float) else f"ρ={c:g}" for c in wide.columns]
    for column in wide.columns[2:]:
        wide[column] = [fmt(v) for v in wide[column]]
    return markdown(wide)


#: The ρ of Ferrando et al.'s error tables on the page (every ρ is in the CSV file).
PACE_GGM_ERRORS_SHOWN = (1e-4, 1e-2, 1.0, 10.0)


def pace_ggm_errors(metric: str) -> str:
    errors = read("pace_ggm", "pace_ggm_errors.csv")
    if errors is None:
        return "*(not run)*"
    rows = []
    for (dataset, rho), group in errors.groupby(["dataset", "rho"], sort=False):
        if rho not in PACE_GGM_ERRORS_SHOWN:
            continue
        row = {"data set": dataset, "ρ": f"{rho:g}"}
        for _, r in group.iterrows():
            row[r["method"]] = mean_se(r[f"{metric}_mean"], r[f"{metric}_se"])
        rows.append(row)
    return markdown(pd.DataFrame(rows))


def pace_ggm_regression() -> str:
    frame = read("pace_ggm", "pace_ggm_regression.csv")
    if frame is None:
        return "*(not run)*"
    rows = []
    for rho, group in frame.groupby("rho", sort=False):
        row = {"ρ": f"{rho:g}"}
        for _, r in group.iterrows():
            # The non-private fit is the same in every trial (its spread is rounding).
            exact = str(r["method"]).startswith("ols")
            text = fmt(r["mse_mean"]) if exact else mean_se(r["mse_mean"], r["mse_se"])
            if not exact and "mse_median" in r:
                text += f"; median {fmt(r['mse_median'])}"
            row[r["method"]] = text
        rows.append(row)
    return markdown(pd.DataFrame(rows))


# ------------------------------------------------------------------ Wang, Xu & He


def thresholding() -> str:
    errors = read("thresholding", "thresholding_errors.csv")
    if errors is None:
        return "*(not run)*"
    rows = []
    sizes = sorted(set(errors["n"]))
    for (panel, p, sr, epsilon), group in errors.groupby(
        ["panel", "p", "sr", "epsilon"], sort=False
    ):
        row = {"panel": panel, "p": p, "sr": sr, "ε": epsilon}
        for n in sizes:
            cell = group[group["n"] == n]
            row[f"n={n:,}"] = (mean_se(cell["rel_spectral_mean"].iloc[0],
                                       cell["rel_spectral_se"].iloc[0]) if len(cell) else "–")
        rows.append(row)
    return markdown(pd.DataFrame(rows))


def thresholding_paper_model() -> str:
    """What the private release keeps in the paper's model: its largest off-diagonal entry
    (at most 1/200 before the rescaling, i.e. gamma/50 after it, gamma = 1/(4 c^2) the
    variance) against the private threshold at the largest n."""
    errors = read("thresholding", "thresholding_errors.csv")
    settings = read("thresholding", "thresholding_settings.csv")
    if errors is None or settings is None:
        return "*(not run)*"
    largest_n = max(errors["n"])
    private = errors[errors["epsilon"] != "non-private"]
    rows = []
    for _, model in settings.iterrows():
        mine = private[(private["p"] == model["p"]) & (private["sr"] == model["sr"])]
        top = mine[mine["n"] == largest_n].drop_duplicates("epsilon")
        reference = errors[(errors["p"] == model["p"]) & (errors["sr"] == model["sr"])
                           & (errors["epsilon"] == "non-private") & (errors["n"] == largest_n)]
        bound = float(model["gamma"]) / 50
        rows.append({
            "p": int(model["p"]), "sr": model["sr"],
            "largest off-diagonal entry (at most)": fmt(bound),
            f"private threshold at n = {largest_n:,}": " / ".join(
                f"{fmt(t)} (ε = {e})" for e, t in zip(top["epsilon"], top["threshold_mean"])),
            "smallest threshold / largest entry": fmt(float(top["threshold_mean"].min()) / bound),
            "off-diagonal kept, private (every n and ε)": fmt(
                float(mine["kept_offdiagonal_mean"].max())),
            f"kept without noise at n = {largest_n:,}": (
                f"{reference['kept_offdiagonal_mean'].iloc[0]:.0f} of "
                f"{int(reference['true_offdiagonal_nonzeros'].iloc[0])}"),
        })
    return markdown(pd.DataFrame(rows))


def thresholding_detectable() -> str:
    errors = read("thresholding_detectable", "thresholding_errors.csv")
    if errors is None:
        return "*(not run)*"
    rows = []
    for _, r in errors.iterrows():
        rows.append({
            "ε": r["epsilon"], "n": f"{int(r['n']):,}",
            "off-diagonal kept": fmt(r["kept_offdiagonal_mean"], 4),
            "share of the support kept": mean_se(r["tpr_mean"], r["tpr_se"]),
            "share of kept entries false": mean_se(r["fdp_mean"], r["fdp_se"]),
            "relative spectral error": mean_se(r["rel_spectral_mean"], r["rel_spectral_se"]),
            "threshold": fmt(r["threshold_mean"]),
        })
    return markdown(pd.DataFrame(rows))


def thresholding_detectable_model() -> str:
    settings = read("thresholding_detectable", "thresholding_settings.csv")
    if settings is None:
        return "*(not run)*"
    r = settings.iloc[0]
    return markdown(pd.DataFrame([{
        "p": int(r["p"]), "sr": r["sr"], "shift λ (paper: 50)": fmt(r["shift"]),
        "largest correlation": fmt(r["largest_correlation"]),
        "true off-diagonal non-zeros": int(r["true_offdiagonal_nonzeros"]),
        "rescaling c": fmt(r["rescaling_factor_c"]),
        "largest / median off-diagonal entry (rescaled)":
            f"{fmt(r['largest_offdiagonal'])} / {fmt(r['median_offdiagonal'])}",
        "variance γ": fmt(r["gamma"]),
        "rows clipped": f"{100 * r['clipped_fraction_mean']:.4f} %",
    }]))


def thresholding_trend() -> str:
    trend = read("thresholding", "thresholding_trend.csv")
    if trend is None:
        return "*(not run)*"
    per_setting = trend[trend["p"].astype(str) != "all"]
    rows = [{"panel": r["panel"], "p": r["p"], "sr": r["sr"], "ε": r["epsilon"],
             "slope vs n": fmt(float(r["slope_vs_n"])),
             "falls at every n": "yes" if str(r["decreasing_in_n"]) == "True" else "no"}
            for _, r in per_setting.iterrows()]
    text = markdown(pd.DataFrame(rows))
    across = trend[trend["p"].astype(str) == "all"]
    if len(across):
        slopes = pd.DataFrame([{"n": f"{float(r['n']):,.0f}",
                                "slope of the error against p (ε = 1, sr = 0.2)":
                                fmt(float(r["slope_vs_p"]))} for _, r in across.iterrows()])
        text += "\n\n" + markdown(slopes)
    return text


# ------------------------------------------------------------------ summary

# Guo et al., Table 1: the paper's "±" (standard deviation over its 10 repetitions), by noise
# level (None: no noise) and n (a) or sparsity (b).
PAPER_NOISY_DATA_SD = {
    "1a": {None: {50: 0.0, 500: 0.0, 5000: 0.0},
           100.0: {50: 2.3e-5, 500: 1.8e-3, 5000: 1.8e-3},
           80.0: {50: 1.0e-5, 500: 2.0e-3, 5000: 3.2e-3},
           60.0: {50: 5.2e-3, 500: 1.9e-3, 5000: 1.2e-2},
           40.0: {50: 4.7e-3, 500: 5.7e-3, 5000: 1.1e-2},
           20.0: {50: 2.6e-2, 500: 2.1e-2, 5000: 1.4e-2}},
    "1b": {None: {0.99: 7.51e-4, 0.98: 2.56e-4, 0.95: 7.51e-4, 0.90: 7.51e-4},
           100.0: {0.99: 7.51e-4, 0.98: 2.56e-4, 0.95: 7.51e-4, 0.90: 7.51e-4},
           80.0: {0.99: 7.51e-4, 0.98: 2.56e-4, 0.95: 7.51e-4, 0.90: 7.51e-4},
           60.0: {0.99: 7.51e-4, 0.98: 2.56e-4, 0.95: 7.51e-4, 0.90: 7.50e-4},
           40.0: {0.99: 7.54e-4, 0.98: 2.56e-4, 0.95: 7.54e-4, 0.90: 7.49e-4},
           20.0: {0.99: 8.87e-4, 0.98: 3.20e-4, 0.95: 9.08e-4, 0.90: 8.54e-4}},
}
#: A published cell is consistent with ours when the two differ by at most this many
#: standard errors of the difference (plus half a unit of the paper's last printed digit).
Z_AGREEMENT = 2.0


def _decimals_half_unit(text: str) -> float:
    """Half a unit of the last digit printed in ``text`` (``"0.9918"`` -> 5e-5)."""
    mantissa = text.lower().split("e")[0]
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    exponent = int(text.lower().split("e")[1]) if "e" in text.lower() else 0
    return 0.5 * 10.0 ** (exponent - decimals)


def _consistent(cell: dict) -> bool | None:
    """Within ``Z_AGREEMENT`` standard errors of the difference; None without a spread."""
    ours, paper = cell["ours"], cell["paper"]
    if not math.isfinite(ours):
        return False
    spread = math.hypot(cell["ours_se"], cell["paper_se"])
    if not math.isfinite(spread):
        return None
    return abs(ours - paper) <= Z_AGREEMENT * spread + cell["half_unit"]


def _near(cell: dict, tolerance: float | None) -> bool | None:
    if tolerance is None:
        return None
    if cell.get("paper_na"):
        return math.isfinite(cell["ours"]) and cell["ours"] > NA_ABOVE
    return _within(cell["ours"], cell["paper"], tolerance)


def _cells_private_precision(algorithm: str, step: str | None) -> list[dict]:
    """Every published cell of Su, Guo & Zhang's Table 1 (DP-RP) or 2 (DP-AGL) with ours."""
    frame = (_private_precision_honest(algorithm) if step is None
             else _private_precision_step(step, algorithm))
    if frame is None:
        return []
    paper = _paper_private_precision()
    paper = paper[paper["table"].astype(str) == ("1" if algorithm == "DP-RP" else "2")]
    cells = []
    for _, published in paper.iterrows():
        ours = frame[(frame["model"] == published["model"]) & (frame["n"] == published["n"])
                     & (frame["epsilon"] == published["epsilon"])]
        if not len(ours):
            continue
        norm = str(published["norm"])
        group = ("ℓ2" if norm == "spectral"
                 else "ℓ1, F at ε ≥ 1.2" if published["epsilon"] >= 1.2 else "ℓ1, F at ε ≤ 0.8")
        cells.append({"ours": float(ours[f"rel_{norm}_mean"].iloc[0]),
                      "ours_se": float(ours[f"rel_{norm}_se"].iloc[0]),
                      "paper": float(published["mean"]), "paper_se": float(published["se"]),
                      "half_unit": 0.005, "group": group})
    return cells


def _cells_covariance_perturbation(family: str) -> list[dict]:
    errors = read_runs("covariance_perturbation", "covariance_perturbation_errors.csv")
    if errors is None:
        return []
    ours = errors[errors["postprocessing"] == "library repair"]
    cells = []
    for (fam, method), by_epsilon in PAPER_COVARIANCE_PERTURBATION.items():
        if fam != family:
            continue
        for epsilon, values in by_epsilon.items():
            for ratio, published in zip((0.5, 1.0, 1.5), values):
                found = ours[(ours["method"] == method) & (ours["epsilon"] == epsilon)
                             & (ours["r"] == ratio)]
                if not len(found):
                    continue  # not run (Sheffet's mechanism at epsilon >= 1)
                cell = found.iloc[0]
                count = int(cell["n_reps"]) - int(cell["n_failed"])
                sd = float(cell["rel_fro_se"]) * math.sqrt(max(count, 1))
                na = published == "NA"
                # The paper ran once: its spread is taken to be ours (one run's sd).
                cells.append({"ours": float(cell["rel_fro_mean"]),
                              "ours_se": float(cell["rel_fro_se"]),
                              "paper": math.inf if na else float(published),
                              "paper_se": sd, "half_unit": 0.0 if na else
                              _decimals_half_unit(published), "group": method,
                              "paper_na": na})
    return cells


def _cells_noisy_data(table: str, paper_side: bool) -> list[dict]:
    """Guo et al.'s Table 1(a) or 1(b): ours (``paper_side``: 1(a) scored as the paper
    scores, 1(b) the post hoc variant) beside the paper's, with the paper's spread."""
    frame = read(f"noisy_data_{table}", f"noisy_data_table_{table}.csv")
    if frame is None:
        return []
    key = "n" if table == "1a" else "sparsity"
    if table == "1a":
        column = "auc_reference_corrected" if paper_side else "auc_corrected"
        rows = [(r[key], r["noise"], r[f"{column}_mean"], r[f"{column}_sd"], r["n_reps"],
                 r["auc_paper"]) for _, r in frame.iterrows()]
    elif paper_side:
        like = _noisy_data_post_hoc()
        if like is None:
            return []
        rows = [(r[key], r["noise"], r["auc_mean"], r["auc_sd"], r["n_reps"], r["auc_paper"])
                for _, r in like.iterrows()]
    else:
        rows = [(r[key], r["noise"], r["auc_corrected_mean"], r["auc_corrected_sd"],
                 r["n_reps"], r["auc_paper"]) for _, r in frame.iterrows()]
    cells = []
    for level, noise, mean, sd, reps, published in rows:
        snr = None if noise == "no noise" else float(str(noise).split()[0])
        paper_sd = PAPER_NOISY_DATA_SD[table][snr][float(level) if table == "1b" else int(level)]
        cells.append({"ours": float(mean), "ours_se": float(sd) / math.sqrt(int(reps)),
                      "paper": float(published), "paper_se": paper_sd / math.sqrt(PAPER_REPS["noisy_data"]),
                      "half_unit": 0.0005,
                      "group": "20 dB" if snr == 20.0 else "no noise to 40 dB"})
    return cells


def _cells_pace_ggm(paper_side: bool) -> list[dict]:
    """Ferrando et al.'s Table 4, breast cancer: ours (``paper_side``: with all of the
    paper's choices) beside the paper's."""
    if paper_side:
        frame = _pace_ggm_variant(PACE_GGM_PAPER_CHOICES)
    else:
        frame = read("pace_ggm", "pace_ggm_measured.csv")
        frame = None if frame is None else frame[frame["dataset"] == "breast_cancer"]
    if frame is None or not len(frame):
        return []
    cells = []
    for _, r in frame.iterrows():
        count = int(r["n_reps"]) - int(r["n_failed"])
        sd = float(r["measured_offdiag_se"]) * math.sqrt(count)
        rho = float(r["rho"])
        cells.append({"ours": float(r["measured_offdiag_mean"]),
                      "ours_se": float(r["measured_offdiag_se"]),
                      # The paper gives no spread for Table 4: its trials are taken to
                      # spread as ours do.
                      "paper": PAPER_PACE_GGM_MEASURED[rho],
                      "paper_se": sd / math.sqrt(PAPER_REPS["pace_ggm"]),
                      "half_unit": 0.05, "group": "ρ ≤ 0.1" if rho <= 0.1 else "ρ ≥ 1"})
    return cells


def _cells_pace_ggm_registry(setting: str) -> list[dict]:
    frame = read("pace_registry_data", "pace_registry_data_measured.csv")
    if frame is None:
        return []
    cells = []
    for _, r in frame[frame["setting"] == setting].iterrows():
        published = PAPER_PACE_GGM_REGISTRY.get(r["dataset"])
        if published is None:
            continue
        count = int(r["n_reps"]) - int(r["n_failed"])
        sd = float(r["measured_offdiag_se"]) * math.sqrt(count)
        rho = float(r["rho"])
        cells.append({"ours": float(r["measured_offdiag_mean"]),
                      "ours_se": float(r["measured_offdiag_se"]),
                      "paper": published[1][list(PAPER_PACE_GGM_MEASURED).index(rho)],
                      "paper_se": sd / math.sqrt(PAPER_REPS["pace_ggm"]), "half_unit": 0.05,
                      "group": "ρ ≤ 0.1" if rho <= 0.1 else "ρ ≥ 1"})
    return cells


def _count(flags: list[bool | None]) -> str:
    known = [f for f in flags if f is not None]
    if not known:
        return "–"
    return f"{sum(known)}/{len(known)} ({100 * sum(known) / len(known):.0f} %)"


def _by_group(cells: list[dict], tolerance: float | None) -> str:
    """Agreement per group (column or regime): within 2 SE, and within the stated
    tolerance when there is one."""
    parts = []
    order = ["ℓ1, F at ε ≥ 1.2", "ℓ1, F at ε ≤ 0.8", "ℓ2", "ρ ≤ 0.1", "ρ ≥ 1",
             "no noise to 40 dB", "20 dB"]
    groups = sorted(dict.fromkeys(c["group"] for c in cells),
                    key=lambda g: order.index(g) if g in order else len(order))
    for group in groups:
        mine = [c for c in cells if c["group"] == group]
        text = f"{group}: {sum(bool(_consistent(c)) for c in mine)}/{len(mine)}"
        if tolerance is not None:
            text += f" ({sum(bool(_near(c, tolerance)) for c in mine)})"
        parts.append(text)
    return "; ".join(parts)


def _summary_reps(run: str, file: str, unit: str = "repetitions",
                  **where) -> Callable[[], str]:
    """The repetitions per cell of ``run`` as the summary names them ("5 repetitions")."""
    def reps() -> str:
        frame = read_runs(run, file) if run == "covariance_perturbation" else read(run, file)
        if frame is None:
            return "not run"
        for key, value in where.items():
            frame = frame[frame[key] == value]
        if not len(frame):
            raise KeyError(f"no rows of {run}/{file} at {where}")
        count = _reps_of(frame)
        return f"{count} {unit[:-1] if count == '1' else unit}"
    return reps


PACE_REGISTRY_PAPER_CHOICES = ("the paper's choices: data's own ranges, uniform sensitivity, "
                               "not clipped")

SUMMARY_ROWS = (
    # paper, table, what was compared, its repetitions, cells, stated tolerance (ours) or None
    ("Su, Guo & Zhang", "Table 1 (DP-RP), models 1-3",
     "honest: declared bounds, fixed public penalties, exact calibration",
     _summary_reps("private_precision", "private_precision_errors.csv", method="DP-RP"),
     lambda: _cells_private_precision("DP-RP", None), RELATIVE_TOLERANCE["private_precision"]),
    ("Su, Guo & Zhang", "Table 1 (DP-RP), models 1-3",
     "the paper's setting, the same closed-form algorithm: data-max normalisation, "
     "cross-validated ridge, the classical formula's noise",
     _summary_reps("private_precision_paper", "private_precision_paper_setting.csv",
                   setting="paper", method="DP-RP"),
     lambda: _cells_private_precision("DP-RP", "paper"), RELATIVE_TOLERANCE["private_precision"]),
    ("Su, Guo & Zhang", "Table 2 (DP-AGL), models 2-4",
     "honest (as above), dpggm's repaired release and adaptive ADMM",
     _summary_reps("private_precision", "private_precision_errors.csv", method="DP-AGL",
                   penalty=AGL_PENALTY),
     lambda: _cells_private_precision("DP-AGL", None), RELATIVE_TOLERANCE["private_precision"]),
    ("Su, Guo & Zhang", "Table 2 (DP-AGL), models 2-4",
     "the paper's inputs (normalisation, cross-validated α, classical noise) but "
     "**not its algorithm**: dpggm's repaired release and adaptive ADMM, not the paper's "
     "ADMM on the raw release",
     _summary_reps("private_precision_paper", "private_precision_paper_setting.csv",
                   setting="paper", method="DP-AGL"),
     lambda: _cells_private_precision("DP-AGL", "paper"), RELATIVE_TOLERANCE["private_precision"]),
    ("Wang, Huai & Xu", "Table 1 (ε-DP), synthetic",
     "honest, dpggm's repaired release; the paper's data handling is not stated, so its "
     "setting is not run",
     _summary_reps("covariance_perturbation", "covariance_perturbation_errors.csv",
                   family="epsilon-DP"),
     lambda: _cells_covariance_perturbation("epsilon-DP"), RELATIVE_TOLERANCE["covariance_perturbation"]),
    ("Wang, Huai & Xu", "Table 2 ((ε, δ)-DP), synthetic", "as above",
     _summary_reps("covariance_perturbation", "covariance_perturbation_errors.csv",
                   family="(epsilon, delta=0.0001)-DP"),
     lambda: _cells_covariance_perturbation("approx"), RELATIVE_TOLERANCE["covariance_perturbation"]),
    ("Guo et al.", "Table 1(a), AUC", "honest: scored against the true graph",
     _summary_reps("noisy_data_1a", "noisy_data_table_1a.csv"),
     lambda: _cells_noisy_data("1a", False), None),
    ("Guo et al.", "Table 1(a), AUC",
     "the same fits scored as the paper scores (against the graphical lasso on the "
     "noiseless data)",
     _summary_reps("noisy_data_1a", "noisy_data_table_1a.csv"),
     lambda: _cells_noisy_data("1a", True), None),
    ("Guo et al.", "Table 1(b), AUC",
     "honest: penalty factor 0.5, diagonal margin 0.1",
     _summary_reps("noisy_data_1b", "noisy_data_table_1b.csv"),
     lambda: _cells_noisy_data("1b", False), None),
    ("Guo et al.", "Table 1(b), AUC",
     "the paper's diagonal with the penalty factor 0.1, **chosen after seeing the "
     "variants** (post hoc)",
     _summary_reps("noisy_data_1b_variants", "noisy_data_1b_variants.csv",
                   variant=NOISY_DATA_POST_HOC),
     lambda: _cells_noisy_data("1b", True), None),
    ("Ferrando et al.", "Table 4, breast cancer, off-diagonal entries measured",
     "honest: d = 31, declared ranges, centered and clipped",
     _summary_reps("pace_ggm", "pace_ggm_measured.csv", "trials", dataset="breast_cancer"),
     lambda: _cells_pace_ggm(False), RELATIVE_TOLERANCE["pace_ggm"]),
    ("Ferrando et al.", "Table 4, breast cancer, off-diagonal entries measured",
     "the paper's choices: d = 32 with the record id, the data's own ranges, uniform "
     "sensitivity, not clipped",
     _summary_reps("pace_ggm_variants", "pace_ggm_variants.csv", "trials",
                   variant=PACE_GGM_PAPER_CHOICES),
     lambda: _cells_pace_ggm(True), RELATIVE_TOLERANCE["pace_ggm"]),
    ("Ferrando et al.", "Table 4, spambase (R package kernlab), off-diagonal entries measured",
     "the paper's choices: the data's own ranges, uniform sensitivity, not clipped",
     _summary_reps("pace_registry_data", "pace_registry_data_measured.csv", "trials",
                   setting=PACE_REGISTRY_PAPER_CHOICES),
     lambda: _cells_pace_ggm_registry(PACE_REGISTRY_PAPER_CHOICES),
     RELATIVE_TOLERANCE["pace_ggm"]),
)

#: The summary's column of agreement within ``Z_AGREEMENT`` standard errors, and its "where".
SUMMARY_2SE = f"within {Z_AGREEMENT:g} SE of the difference"
SUMMARY_WHERE = f"where ({Z_AGREEMENT:g} SE; stated tolerance in brackets)"


def _tolerance_text(tolerance: float) -> str:
    return f"±{100 * tolerance:g} %"


def _summary_rows() -> list[dict]:
    rows = []
    for paper, table, compared, reps, cells_of, tolerance in SUMMARY_ROWS:
        cells = cells_of()
        rows.append({
            "paper": paper, "table": table, "compared": f"{compared}; {reps()}",
            "cells": len(cells),
            SUMMARY_2SE: _count([_consistent(c) for c in cells]),
            "stated tolerance (ours)": "–" if tolerance is None else _tolerance_text(tolerance),
            "within it": ("–" if tolerance is None
                          else _count([_near(c, tolerance) for c in cells])),
            SUMMARY_WHERE: _by_group(cells, tolerance),
        })
    return rows


def summary() -> str:
    """Per paper, table and run compared: the published cells, how many are consistent
    with ours within two standard errors of the difference, how many within our stated
    tolerance, and where (by column or regime) the agreement is."""
    return markdown(pd.DataFrame(_summary_rows()))


# ------------------------------------------------------------------ runs


def _registry() -> dict:
    """``dpggm.experiments.reproduction.RUNS`` (from the source tree beside this page when
    dpggm is not installed)."""
    try:
        from dpggm.experiments.reproduction import RUNS
    except ImportError:
        sys.path.insert(0, str(HERE.parents[1] / "src"))
        from dpggm.experiments.reproduction import RUNS
    return RUNS


def _environment(run: str) -> dict[str, str] | None:
    found = sorted((HERE / run).glob("*_environment.csv"))
    if len(found) != 1:
        return None
    frame = pd.read_csv(found[0])
    return dict(zip(frame["key"], frame["value"].astype(str)))


def _minutes(run: str) -> str:
    info = _environment(run)
    return "–" if info is None else f"{float(info['wall_seconds']) / 60:.0f}"


def run_table(name: str) -> str:
    """How run ``name`` was made: its regeneration command, the call behind it, its
    reduced re-run and its environment."""
    run = _registry()[name]
    info = _environment(name)
    rows = [("regenerate", f"`python3 -m dpggm.experiments.reproduction run {name}`"),
            ("which calls", f"`{run.command}`"),
            ("reduced re-run (CI)", run.reduced_size)]
    if info is None:
        rows.append(("run", "*(not run)*"))
    else:
        rows += [
            ("started (UTC)", info["started_utc"]),
            ("wall time", f"{float(info['wall_seconds']):.0f} s "
                          f"({float(info['wall_seconds']) / 60:.1f} min)"),
            ("source", f"`{info.get('source', 'not recorded')}`"),
            ("load average at the end (1, 5, 15 min)", info.get("load_average_at_end",
                                                                 "not recorded")),
            ("dpggm / numpy / scipy / scikit-learn / pandas",
             " / ".join(info[k] for k in ("dpggm", "numpy", "scipy", "scikit-learn", "pandas"))),
            ("Python, platform", f"{info['python']}, {info['platform']}"),
            ("CPUs", f"{info['cpus_available']} of {info['cpu_count']} (shared with other "
                     "jobs)"),
        ]
    return markdown(pd.DataFrame(rows, columns=[f"`{name}`", "value"]))


def runs_table() -> str:
    rows = []
    for name, run in _registry().items():
        info = _environment(name) or {}
        rows.append({"run": f"`{name}`", "what": run.paper,
                     "started (UTC)": info.get("started_utc", "*(not run)*"),
                     "minutes": _minutes(name),
                     "source": f"`{info.get('source', 'not recorded')}`",
                     "load at the end": info.get("load_average_at_end", "not recorded")})
    return markdown(pd.DataFrame(rows))


# ------------------------------------------------------------------ Ferrando et al., more


def _variant_effect(variants: pd.DataFrame, variant: str, base: str) -> pd.DataFrame:
    mine = variants[variants["variant"] == variant].set_index("rho")
    ref = variants[variants["variant"] == base].set_index("rho")
    diff = mine["measured_offdiag_mean"] - ref["measured_offdiag_mean"]
    se = np.hypot(mine["measured_offdiag_se"], ref["measured_offdiag_se"])
    return pd.DataFrame({"diff": diff, "z": diff / se})


def pace_ggm_variant_effects() -> str:
    """Every variant minus the first row, per rho: the difference in entries measured and
    in standard errors of the difference."""
    variants = read("pace_ggm_variants", "pace_ggm_variants.csv")
    if variants is None:
        return "*(not run)*"
    names = list(dict.fromkeys(variants["variant"]))
    rows = []
    for variant in names[1:]:
        effect = _variant_effect(variants, variant, names[0])
        row = {"variant": variant}
        for rho, r in effect.iterrows():
            row[f"ρ={rho:g}"] = f"{r['diff']:+.1f} ({r['z']:+.1f})"
        rows.append(row)
    return markdown(pd.DataFrame(rows))


def ridge_lda() -> str:
    frame = read("ridge_precision_lda", "ridge_precision_lda_errors.csv")
    if frame is None:
        return "*(not run)*"
    rows = [{"budget": r["budget"], "test misclassification, mean (SE)":
             mean_se(r["error_mean"], r["error_se"]), "chosen ridge (median)":
             fmt(r["ridge_median"]), "repetitions": int(r["n_reps"])}
            for _, r in frame.iterrows()]
    return markdown(pd.DataFrame(rows))


def _values_lda() -> dict:
    frame = read("ridge_precision_lda", "ridge_precision_lda_errors.csv")
    if frame is None:
        return {"private_precision.lda.summary": "not run"}
    private = frame[frame["budget"] != "non-private"]
    return {"private_precision.lda.summary": (
        f"the non-private error is {fmt(_one(frame, 'error_mean', budget='non-private'), 2)}; "
        "the private errors are " + ", ".join(
            f"{fmt(r['error_mean'], 2)} at {r['budget'].replace('epsilon=', 'ε = ')}"
            for _, r in private.iterrows()))}


def pace_registry() -> str:
    """PACE-GGM's measured off-diagonal entries on the registry data sets beside the
    paper's Table 4."""
    frame = read("pace_registry_data", "pace_registry_data_measured.csv")
    if frame is None:
        return "*(not run)*"
    rhos = list(dict.fromkeys(frame["rho"]))
    rows = []
    for (dataset, setting), group in frame.groupby(["dataset", "setting"], sort=False):
        row = {"data set": dataset, "setting": setting, "d": int(group["d"].iloc[0]),
               "trials": int(group["n_reps"].iloc[0])}
        for _, r in group.iterrows():
            row[f"ρ={r['rho']:g}"] = mean_se(r["measured_offdiag_mean"], r["measured_offdiag_se"])
        rows.append(row)
    for dataset in dict.fromkeys(frame["dataset"]):
        paper = PAPER_PACE_GGM_REGISTRY.get(dataset)
        if paper:
            row = {"data set": dataset, "setting": "**paper**", "d": paper[0],
                   "trials": PAPER_REPS["pace_ggm"]}
            row.update({f"ρ={rho:g}": fmt(value) for rho, value in zip(rhos, paper[1])})
            rows.append(row)
    return markdown(pd.DataFrame(rows))


# The paper's Table 4 rows of the registry data sets: d, entries at the seven rho.
PAPER_PACE_GGM_REGISTRY = {"spambase": (57, (7.8, 7.8, 8.5, 8.1, 10.9, 11.5, 16.9))}

# What each paper's real-data sections use, and whether a package registry ships it.
REAL_DATA = (
    ("Su, Guo & Zhang", "Ionosphere (LDA, Figure 2)", "yes: R package mlbench "
     "(`apt-get install r-cran-mlbench`)", "**run** (Su, Guo & Zhang, Figure 2; curves only in the "
     "paper, nothing to count)"),
    ("Su, Guo & Zhang", "cell signalling (Sachs et al.; ROC, Figure 3)", "no: no Debian or PyPI "
     "package found that ships the flow-cytometry measurements", "not run"),
    ("Wang, Huai & Xu", "colon cancer (Alon et al.), Parkinson's (Little et al.)", "no: not in "
     "Debian's R packages (the colon data are in Bioconductor's colonCA, not packaged)",
     "not run"),
    ("Guo et al.", "cell signalling, 11- and 115-bus power grids, brain fMRI, U.S. Congress "
     "votes, MovieLens, county-level chickenpox, soil microbiome (Table 2)", "no: none "
     "ships in Debian's R packages or a PyPI package's files (loaders that download at run "
     "time cannot work here)", "not run"),
    ("Ferrando et al.", "spambase (Table 4)", "yes: R package kernlab (`apt-get install "
     "r-cran-kernlab`)", "**run**: below, and in the summary"),
    ("Ferrando et al.", "BreastCancerWisconsin (Table 4)", "yes: scikit-learn ships it (30 "
     "features and the diagnosis; the record id from `wdbc_ids.csv`)", "run (above)"),
    ("Ferrando et al.", "adult, SeoulBike, LifeExpectancy, Parkinsons, thyroid_ann, ibm, pol_reg, "
     "bank32nh, ailerons, communities_crime, indian_pines, madeline", "no: not in Debian's R "
     "data packages as the paper used them, nor in a PyPI package's files", "not run"),
    ("Wang, Xu & He", "none (synthetic only)", "–", "–"),
)


def real_data() -> str:
    return markdown(pd.DataFrame(REAL_DATA, columns=["paper", "data set", "in a package "
                                                     "registry", "here"]))


# ------------------------------------------------------------------ the prose's numbers
#
# Every number in the page's text is one of these, computed from the CSV files (the
# template docs/reproduction/reproduction.md.in names them as {{name}}).


def span(values, digits: int = 2) -> str:
    """``"a–b"`` (or ``"a"`` when all equal) of the finite values, ``digits`` significant."""
    array = np.asarray([float(v) for v in values], dtype=float)
    array = array[np.isfinite(array)]
    if not array.size:
        return "–"
    low, high = fmt(float(array.min()), digits), fmt(float(array.max()), digits)
    if low == high:
        return low
    # A dash between negative numbers reads as a minus sign.
    return f"{low} to {high}" if array.min() < 0 else f"{low}–{high}"


def median_span(values, digits: int = 2) -> str:
    array = np.asarray([float(v) for v in values], dtype=float)
    array = array[np.isfinite(array)]
    if not array.size:
        return "–"
    return f"{fmt(float(np.median(array)), digits)} ({span(array, digits)})"


def listed(values, digits: int = 3) -> str:
    return ", ".join(fmt(float(v), digits) for v in values)


def share(numerator: float, denominator: float) -> str:
    return f"{100 * numerator / denominator:.0f} %" if denominator else "–"


def _one(frame: pd.DataFrame, column: str, **where) -> float:
    for key, value in where.items():
        frame = frame[frame[key] == value]
    if len(frame) != 1:
        raise KeyError(f"{column} at {where}: {len(frame)} rows")
    return float(frame[column].iloc[0])


def _reps(run: str, file: str, **where) -> str:
    frame = read(run, file)
    for key, value in where.items():
        frame = frame[frame[key] == value]
    return _reps_of(frame)


# Su, Guo & Zhang


def _paper_private_precision_table(table: str) -> pd.DataFrame:
    paper = _paper_private_precision()
    return paper[paper["table"].astype(str) == table]


def _ratios_private_precision(frame: pd.DataFrame, table: str, norms, epsilons=None) -> list[float]:
    paper = _paper_private_precision_table(table)
    out = []
    for _, cell in paper.iterrows():
        if cell["norm"] not in norms or (epsilons is not None and cell["epsilon"] not in epsilons):
            continue
        ours = frame[(frame["model"] == cell["model"]) & (frame["n"] == cell["n"])
                     & (frame["epsilon"] == cell["epsilon"])]
        if len(ours):
            out.append(float(ours[f"rel_{cell['norm']}_mean"].iloc[0]) / float(cell["mean"]))
    return out


def _step_ratios(algorithm: str, index: int, column: str) -> np.ndarray:
    """Cell by cell, ``column`` after step ``index`` of PRIVATE_PRECISION_STEPS over before it."""
    table = "Table 1" if algorithm == "DP-RP" else "Table 2"
    models = set(_paper_private_precision_table(table[-1])["model"])
    previous = _private_precision_in_original_units(_private_precision_honest(algorithm),
                                                    algorithm, None)
    for i, (_, step) in enumerate(PRIVATE_PRECISION_STEPS):
        current = _private_precision_in_original_units(_private_precision_step(step, algorithm),
                                                       algorithm, step)
        if i == index:
            both = previous.merge(current, on=["model", "n", "epsilon"],
                                  suffixes=("_before", "_after"))
            both = both[both["model"].isin(models)]
            ratio = (both[f"{column}_after"] / both[f"{column}_before"]).to_numpy(float)
            return ratio[np.isfinite(ratio)]
        previous = current
    raise IndexError(index)


def _eps_error_step(frame_values: dict) -> list[float]:
    """(0.8 · e(0.8)) / (1.2 · e(1.2)) per (model, n, norm): the step of ε × error at 1."""
    out = []
    for _key, by_epsilon in frame_values.items():
        if 0.8 in by_epsilon and 1.2 in by_epsilon:
            out.append(0.8 * by_epsilon[0.8] / (1.2 * by_epsilon[1.2]))
    return out


def _by_cell(frame: pd.DataFrame, value_of) -> dict:
    out: dict = {}
    for _, r in frame.iterrows():
        for norm in ("l1", "fro", "spectral"):
            out.setdefault((r["model"], r["n"], norm), {})[float(r["epsilon"])] = value_of(r, norm)
    return out


def _drop(values: dict, norm: str) -> list[float]:
    return [v[0.1] / v[0.3] for (m, n, nm), v in values.items() if nm == norm
            and 0.1 in v and 0.3 in v]


def _paper_private_precision_values() -> dict:
    paper = _paper_private_precision_table("1")
    out: dict = {}
    for _, r in paper.iterrows():
        out.setdefault((r["model"], r["n"], r["norm"]), {})[float(r["epsilon"])] = float(r["mean"])
    return out


def _ours_private_precision_values() -> dict:
    frame = _private_precision_step("paper", "DP-RP")
    frame = frame[frame["model"].isin(set(_paper_private_precision_table("1")["model"]))]
    return _by_cell(frame, lambda r, norm: float(r[f"rel_{norm}_mean"]))


def _within_count(cells: list[dict], group: str | None, tolerance: float | None,
                  the: bool = False) -> str:
    """"k of n": the cells of ``group`` (every group: None) within ``tolerance``, or within
    ``Z_AGREEMENT`` standard errors of the difference when ``tolerance`` is None."""
    mine = [c for c in cells if group is None or c["group"] == group]
    flags = [(_near(c, tolerance) if tolerance is not None else _consistent(c)) for c in mine]
    return f"{sum(bool(f) for f in flags)} of {'the ' if the else ''}{len(mine)}"


def _gap_se(cell: dict) -> float:
    """|ours − paper| in standard errors of the difference (nan without a spread)."""
    spread = math.hypot(cell["ours_se"], cell["paper_se"])
    if not (math.isfinite(spread) and spread > 0 and math.isfinite(cell["ours"])):
        return math.nan
    return abs(cell["ours"] - cell["paper"]) / spread


def _largest_gap_within(cells: list[dict], tolerance: float) -> str:
    """The largest gap, in standard errors of the difference, that ``tolerance`` passes."""
    gaps = [_gap_se(c) for c in cells if _near(c, tolerance)]
    gaps = [g for g in gaps if math.isfinite(g)]
    return fmt(max(gaps), 2) if gaps else "–"


def sci(value: float) -> str:
    """``1e-4`` for 0.0001 (the page's way of writing a power of ten)."""
    mantissa, exponent = f"{value:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _grid_edges() -> str:
    frame = read("private_precision_paper", "private_precision_paper_setting.csv")
    frame = frame[(frame["setting"] == "paper") & (frame["method"] == "DP-RP")]
    ridge, alpha = int(frame["n_cv_ridge_at_grid_edge"].sum()), int(
        frame["n_cv_alpha_at_grid_edge"].sum())
    if not ridge and not alpha:
        return "no choice fell at an end of either grid"
    return f"{ridge} ridge and {alpha} α choices fell at an end of their grid"


def _bound_over_max() -> str:
    settings = read("private_precision", "private_precision_settings.csv")
    frame = read("private_precision_paper", "private_precision_paper_setting.csv")
    frame = frame[(frame["setting"] == "data-max") & (frame["method"] == "DP-RP")]
    ratios = [float(settings.loc[settings["model"] == r["model"], "row_bound_B"].iloc[0])
              / float(r["data_max_row_norm_mean"]) for _, r in frame.iterrows()]
    return span(ratios, 3)


def _raw_failed(frame: pd.DataFrame) -> str:
    return f"{int(frame['n_failed'].sum())} of {int(frame['n_reps'].sum())}"


def _values_private_precision() -> dict:
    errors = read("private_precision", "private_precision_errors.csv")
    honest_rp = _private_precision_honest("DP-RP")
    paper_rp = _private_precision_step("paper", "DP-RP")
    paper_agl = _private_precision_step("paper", "DP-AGL")
    paper_agl = paper_agl[paper_agl["model"].isin(set(_paper_private_precision_table("2")["model"]))]
    trend = read("private_precision", "private_precision_trend.csv")
    roc = read("private_precision", "private_precision_roc_auc.csv")
    raw = errors[errors["method"] == RAW_AGL]
    agl = _private_precision_honest("DP-AGL")
    cells_paper_rp = _cells_private_precision("DP-RP", "paper")
    cells_paper_agl = _cells_private_precision("DP-AGL", "paper")
    cells_honest_agl = _cells_private_precision("DP-AGL", None)
    agreeing_agl = [c for c in cells_honest_agl if _consistent(c)]
    paper_agl_table = _paper_private_precision_table("2")
    agl_paper_models = agl[agl["model"].isin(set(paper_agl_table["model"]))]
    solved = agl_paper_models[agl_paper_models["n_repaired"] == 0]
    tol = RELATIVE_TOLERANCE["private_precision"]
    paper_values, our_values = _paper_private_precision_values(), _ours_private_precision_values()
    honest_ratios = _ratios_private_precision(honest_rp, "1", ("l1", "fro"))
    values = {
        "private_precision.honest.reps": _reps("private_precision", "private_precision_errors.csv",
                                 method="DP-RP"),
        "private_precision.honest.minutes": _minutes("private_precision"),
        "private_precision.paper.reps": _reps("private_precision_paper", "private_precision_paper_setting.csv",
                                setting="paper"),
        "private_precision.paper.minutes": _minutes("private_precision_paper"),
        "private_precision.paper.grid_edges": _grid_edges(),
        "private_precision.bound_over_max": _bound_over_max(),
        "private_precision.step1.sigma": median_span(_step_ratios("DP-RP", 0, "sigma")),
        "private_precision.step1.rp_fro": median_span(_step_ratios("DP-RP", 0, "fro")),
        "private_precision.step1.agl_fro": median_span(_step_ratios("DP-AGL", 0, "fro")),
        "private_precision.step2.ridge": median_span(_step_ratios("DP-RP", 1, "penalty")),
        "private_precision.step2.rp_fro": median_span(_step_ratios("DP-RP", 1, "fro")),
        "private_precision.step2.alpha": median_span(_step_ratios("DP-AGL", 1, "penalty")),
        "private_precision.step3.sigma": median_span(_step_ratios("DP-RP", 2, "sigma")),
        "private_precision.step3.rp_fro": median_span(_step_ratios("DP-RP", 2, "fro")),
        "private_precision.paper.raw_failed": f"{int(paper_agl['n_raw_failed'].sum())} of "
                                f"{int(paper_agl['n_reps'].sum())}",
        "private_precision.paper.agl_fro_range": span(paper_agl["rel_fro_mean"]),
        "private_precision.paper.agl_fro_paper_range": span(
            _paper_private_precision_table("2").query("norm == 'fro'")["mean"]),
        "private_precision.paper.rp_ratio_high": span(_ratios_private_precision(paper_rp, "1", ("l1", "fro"), (1.2, 2.0))),
        "private_precision.paper.rp_ratio_low": span(_ratios_private_precision(paper_rp, "1", ("l1", "fro"),
                                                   (0.1, 0.3, 0.5, 0.8))),
        "private_precision.paper_step_at_1": span(_eps_error_step(paper_values)),
        "private_precision.our_step_at_1": span(_eps_error_step(our_values)),
        "private_precision.paper_spectral_drop": span(_drop(paper_values, "spectral")),
        "private_precision.paper_l1_drop": span(_drop(paper_values, "l1")),
        "private_precision.our_spectral_drop": span(_drop(our_values, "spectral")),
        "private_precision.our_l1_drop": span(_drop(our_values, "l1")),
        "private_precision.honest.rp_ratio": span(honest_ratios),
        "private_precision.honest.rp_ratio_median": fmt(float(np.median(honest_ratios)), 2),
        "private_precision.honest.slope_sigma": span(trend[(trend["method"] == "DP-RP")
                                             & (trend["norm"] == "fro")]["slope_vs_sigma"]),
        "private_precision.paper.rp_within_high": _within_count(cells_paper_rp, "ℓ1, F at ε ≥ 1.2",
                                                                tol, the=True),
        "private_precision.paper.rp_within_low": _within_count(cells_paper_rp, "ℓ1, F at ε ≤ 0.8",
                                                               tol, the=True),
        "private_precision.paper.rp_within_spectral": _within_count(cells_paper_rp, "ℓ2", tol,
                                                                    the=True),
        "private_precision.paper.rp_2se": _within_count(cells_paper_rp, None, None),
        "private_precision.paper.rp_2se_high": _within_count(cells_paper_rp, "ℓ1, F at ε ≥ 1.2",
                                                             None, the=True),
        "private_precision.paper.rp_2se_rest": _within_count(
            [c for c in cells_paper_rp if c["group"] != "ℓ1, F at ε ≥ 1.2"], None, None, the=True),
        "private_precision.paper.rp_gap_passed": _largest_gap_within(cells_paper_rp, tol),
        "private_precision.paper.repaired": f"{int(paper_agl['n_repaired'].sum())} of "
                                            f"{int(paper_agl['n_reps'].sum())}",
        "private_precision.paper.agl_within": _within_count(cells_paper_agl, None, tol),
        "private_precision.paper.agl_within.ours": span(
            [c["ours"] for c in cells_paper_agl if _near(c, tol)]),
        "private_precision.paper.agl_within.paper": span(
            [c["paper"] for c in cells_paper_agl if _near(c, tol)]),
        "private_precision.paper_agl_small_eps": span(paper_agl_table[
            paper_agl_table["epsilon"] == min(paper_agl_table["epsilon"])]["mean"]),
        "private_precision.paper_agl_small_eps_fro": span(paper_agl_table[
            (paper_agl_table["epsilon"] == min(paper_agl_table["epsilon"]))
            & (paper_agl_table["norm"] == "fro")]["mean"]),
        "private_precision.honest.agl_2se": _within_count(cells_honest_agl, None, None),
        "private_precision.honest.agl_2se_far": (
            f"{sum(not 0.5 <= c['ours'] / c['paper'] <= 2 for c in agreeing_agl)} of the "
            f"{len(agreeing_agl)}"),
        "private_precision.honest.agl_solved": f"{len(solved)} of the {len(agl_paper_models)}",
        **{f"private_precision.honest.agl_solved.{norm}": fmt(float(np.median(
            _ratios_private_precision(solved, "2", (norm,)))), 2)
           for norm in ("l1", "fro", "spectral")},
        "private_precision.honest.agl_repaired_small_eps": (
            f"{int(agl[agl['epsilon'] == 0.1]['n_repaired'].sum())} of "
            f"{int(agl[agl['epsilon'] == 0.1]['n_reps'].sum())}"),
        "private_precision.honest.agl_fro_small_eps": span(agl[agl["epsilon"] == 0.1]["rel_fro_mean"]),
        "private_precision.honest.raw_failed_small": _raw_failed(raw[(raw["penalty"] == AGL_SMALL_PENALTY)
                                                       & (raw["epsilon"] == 0.1)]),
        "private_precision.honest.raw_failed_large": _raw_failed(raw[(raw["penalty"] == AGL_PENALTY)
                                                       & (raw["epsilon"] == 0.1)]),
    }
    values["private_precision.roc.reps"] = _reps_of(roc)
    for model in (3, 4):
        for budget, key in (("epsilon=1", "1"), ("epsilon=2", "2"), ("non-private", "np")):
            values[f"private_precision.roc.{model}.{key}"] = fmt(_one(roc, "auc_mean", model=model,
                                                         budget=budget), 2)
    return values


# Wang, Huai & Xu


def _values_covariance_perturbation() -> dict:
    errors = read_runs("covariance_perturbation", "covariance_perturbation_errors.csv")
    ours = errors[errors["postprocessing"] == "library repair"]
    raw = errors[errors["postprocessing"] == "none (paper)"]

    def of(method, **where):
        frame = ours[ours["method"] == method]
        for key, value in where.items():
            frame = frame[frame[key] == value]
        return frame

    def paper(family, method, epsilons=(0.5, 1.0, 1.5)):
        return [float(v) for e in epsilons for v in PAPER_COVARIANCE_PERTURBATION[(family, method)][e]]

    gaussian = of("Gaussian")
    by_r = gaussian.groupby("r")["rel_fro_mean"].mean()
    paper_by_r = [np.mean([float(PAPER_COVARIANCE_PERTURBATION[("approx", "Gaussian")][e][i]) for e in
                           (0.5, 1.0, 1.5)]) for i in range(3)]
    laplace_raw = raw[raw["method"] == "Laplace"]
    minutes = sum(float((_environment(r) or {"wall_seconds": "nan"})["wall_seconds"])
                  for r in ("covariance_perturbation", "covariance_perturbation_r1.5",
                            "covariance_perturbation_r0.5")) / 60
    return {
        "covariance_perturbation.reps": ", ".join(
            f"{int(ours[ours['r'] == r]['n_reps'].max())} repetition"
            f"{'s' if int(ours[ours['r'] == r]['n_reps'].max()) > 1 else ''} at r = {r:g}"
            for r in sorted(set(ours["r"]))),
        "covariance_perturbation.minutes": f"{minutes:.0f}",
        "covariance_perturbation.sulq": span(of("SULQ")["rel_fro_mean"], 3),
        "covariance_perturbation.wishart_pure": span(of("Wishart-pure (Jiang et al.)")["rel_fro_mean"], 3),
        "covariance_perturbation.wishart_pure.paper": span(paper("epsilon-DP", "Wishart-pure (Jiang et al.)"), 3),
        "covariance_perturbation.sheffet": span(of("Wishart (Sheffet)", epsilon=0.5)["rel_fro_mean"], 4),
        "covariance_perturbation.sheffet.paper": span(paper("approx", "Wishart (Sheffet)", (0.5,)), 4),
        "covariance_perturbation.gaussian": span(gaussian["rel_fro_mean"]),
        "covariance_perturbation.gaussian.paper": span(paper("approx", "Gaussian")),
        "covariance_perturbation.gaussian.by_r": listed([by_r.get(r, math.nan) for r in (0.5, 1.0, 1.5)]),
        "covariance_perturbation.gaussian.paper.by_r": listed(paper_by_r),
        "covariance_perturbation.laplace": span(of("Laplace")["rel_fro_mean"], 4),
        "covariance_perturbation.laplace.paper": span(paper("epsilon-DP", "Laplace"), 3),
        "covariance_perturbation.laplace.raw_failed": _raw_failed(laplace_raw),
    }


# Guo et al.


def _values_noisy_data() -> dict:
    a = read("noisy_data_1a", "noisy_data_table_1a.csv")
    b = read("noisy_data_1b", "noisy_data_table_1b.csv")
    variants = _noisy_data_variants()
    clean_b = b[b["noise"] == "no noise"]
    post = _noisy_data_post_hoc()
    a20 = a[a["noise"] == "20 dB"]
    noise_effect = max(
        abs(float(r["auc_corrected_mean"]) - _one(clean_b, "auc_corrected_mean",
                                                  sparsity=r["sparsity"]))
        for _, r in b.iterrows())

    def variant(name, sparsity, column="auc_mean"):
        return _one(variants, column, variant=name, sparsity=sparsity, noise="no noise")

    base = "as run: penalty factor 0.5, diagonal margin 0.1"
    factors = []
    for factor in ("0.25", "0.1", "0.05"):
        name = f"penalty factor {factor}"
        factors.append(f"{fmt(variant(name, 0.95))} / {fmt(variant(name, 0.9))} "
                       f"(factor {factor})")
    diagonal = max(abs(variant("the paper's diagonal (margin 1e-6)", s) - variant(base, s))
                   for s in (0.99, 0.98, 0.95, 0.9))
    sds = [v for by in PAPER_NOISY_DATA_SD["1b"].values() for v in by.values()]
    gap = (a20["auc_reference_corrected_mean"] - a20["auc_paper"]).to_numpy(float)
    return {
        "noisy_data.1a.reps": _reps("noisy_data_1a", "noisy_data_table_1a.csv"),
        "noisy_data.1b.reps": _reps("noisy_data_1b", "noisy_data_table_1b.csv"),
        "noisy_data.variants.reps": _reps("noisy_data_1b_variants", "noisy_data_1b_variants.csv"),
        "noisy_data.1b.honest.clean": listed(clean_b["auc_corrected_mean"]),
        "noisy_data.1b.paper.clean": listed(clean_b["auc_paper"]),
        "noisy_data.1b.noise_effect": fmt(noise_effect, 1),
        "noisy_data.1b.paper_sd_range": span(sds),
        "noisy_data.1b.paper_se_max": fmt(max(sds) / math.sqrt(PAPER_REPS["noisy_data"]), 1),
        "noisy_data.1b.honest.2se": _within_count(_cells_noisy_data("1b", False), None, None,
                                                  the=True),
        "noisy_data.1b.edges_as_run": f"{variant(base, 0.9, 'edges_mean'):,.0f}",
        "noisy_data.1b.factor_effect": "; ".join(factors),
        "noisy_data.1b.diagonal_effect": f"at most {fmt(diagonal, 1)}",
        "noisy_data.1b.post_hoc.clean": listed(post[post["noise"] == "no noise"]["auc_mean"]),
        "noisy_data.1b.post_hoc.20db": listed(post[post["noise"] == "20 dB"]["auc_mean"]),
        "noisy_data.1b.post_hoc.2se": _within_count(_cells_noisy_data("1b", True), None, None,
                                                    the=True),
        "noisy_data.1b.model_edges": f"{_noisy_data_model_edges(min(b['sparsity'])):,}",
        "noisy_data.1a.honest.n50": span(a[a["n"] == 50]["auc_corrected_mean"], 3),
        "noisy_data.1a.honest.large": span(a[a["n"] >= 500]["auc_corrected_mean"], 3),
        "noisy_data.1a.reference.20db": listed(a20["auc_reference_corrected_mean"]),
        "noisy_data.1a.paper.20db": listed(a20["auc_paper"]),
        "noisy_data.1a.paper_sd.20db": listed(PAPER_NOISY_DATA_SD["1a"][20.0].values(), 2),
        "noisy_data.1a.reference.2se": _within_count(_cells_noisy_data("1a", True), None, None,
                                                     the=True),
        "noisy_data.1a.reference.clean": span(a[a["noise"] == "no noise"][
            "auc_reference_corrected_mean"], 3),
        "noisy_data.1a.paper.clean": span(a[a["noise"] == "no noise"]["auc_paper"], 3),
        "noisy_data.1b.paper.clean.span": span(clean_b["auc_paper"], 3),
        "noisy_data.1a.honest.2se": str(sum(bool(_consistent(c)) for c in _cells_noisy_data("1a", False))),
        "noisy_data.1a.gap.20db": span(gap),
        "noisy_data.1a.frobenius.500": (
            f"{fmt(_one(a20, 'frobenius_corrected_mean', n=500))} against "
            f"{fmt(_one(a20, 'frobenius_uncorrected_mean', n=500))}"),
        "noisy_data.gwishart.disagreement": span(a["gwishart_max_abs_diff_mean"]),
        "noisy_data.epsilon.honest.20db": fmt(float(a20["epsilon_honest_mean"].iloc[0]), 2),
        "noisy_data.epsilon.honest.100db": fmt(float(a[a["noise"] == "100 dB"][
            "epsilon_honest_mean"].iloc[0]), 2),
        "noisy_data.epsilon.paper.20db": fmt(_one(a20, "epsilon_paper_mean", n=5000), 2),
    }


# Ferrando et al.


def _values_pace_ggm() -> dict:
    measured = read("pace_ggm", "pace_ggm_measured.csv")
    errors = read("pace_ggm", "pace_ggm_errors.csv")
    runtime = read("pace_ggm", "pace_ggm_runtime.csv")
    regression = read("pace_ggm", "pace_ggm_regression.csv")
    variants = read("pace_ggm_variants", "pace_ggm_variants.csv")
    structure = read("pace_ggm_variants", "pace_ggm_structure.csv")
    bc = measured[measured["dataset"] == "breast_cancer"]
    like = _pace_ggm_variant(PACE_GGM_PAPER_CHOICES)

    def mine(rho):
        return _one(bc, "measured_offdiag_mean", rho=rho)

    def structure_of(variant):
        r = structure[structure["variant"] == variant].iloc[0]
        return (f"{fmt(r['mean_abs_r_before_clipping'])} and "
                f"{fmt(r['rank_eff_before_clipping'])}")

    summary = ", ".join(
        f"{fmt(mine(rho))} against {fmt(PAPER_PACE_GGM_MEASURED[rho])} "
        f"({100 * (mine(rho) / PAPER_PACE_GGM_MEASURED[rho] - 1):+.0f} %) at ρ = {rho:g}"
        for rho in (1e-2, 1.0, 10.0))
    choices = ", ".join(
        f"{fmt(_one(like, 'measured_offdiag_mean', rho=rho))} against "
        f"{fmt(PAPER_PACE_GGM_MEASURED[rho])} at ρ = {rho:g}" for rho in (0.1, 1.0, 2.0, 10.0))
    gaps = []
    for rho in (1.0, 2.0, 10.0):
        r = like[like["rho"] == rho].iloc[0]
        sd = float(r["measured_offdiag_se"]) * math.sqrt(int(r["n_reps"]) - int(r["n_failed"]))
        se = math.hypot(float(r["measured_offdiag_se"]), sd / math.sqrt(PAPER_REPS["pace_ggm"]))
        gaps.append(f"{(float(r['measured_offdiag_mean']) - PAPER_PACE_GGM_MEASURED[rho]) / se:+.1f}"
                    f" at ρ = {rho:g}")
    failed = variants[variants["n_failed"] > 0]
    failed_text = ("none" if not len(failed) else "; ".join(
        f"{int(r['n_failed'])} of {int(r['n_reps'])} in “{r['variant']}” at ρ = {r['rho']:g}"
        for _, r in failed.iterrows()))

    def ratio(method, other, rhos, metric):
        frame = errors[errors["rho"].isin(rhos)]
        a = frame[frame["method"] == method].set_index(["dataset", "rho"])[f"{metric}_mean"]
        b = frame[frame["method"] == other].set_index(["dataset", "rho"])[f"{metric}_mean"]
        return (a / b).to_numpy(float)

    def best_of(methods, rhos, metric):
        frame = errors[errors["rho"].isin(rhos)]
        table = frame.pivot_table(index=["dataset", "rho"], columns="method",
                                  values=f"{metric}_mean")
        return table[list(methods)].min(axis=1), table["pace"]

    def both(method, other, rhos):
        return (f"{span(ratio(method, other, rhos, 'mahalanobis'))} and "
                f"{span(ratio(method, other, rhos, 'frobenius'))}")

    ahead = []
    for metric in ("mahalanobis", "frobenius"):
        best, pace = best_of(("separate", "adaptive"), (1e-4, 1e-3, 1e-2), metric)
        ahead.append(f"{int((pace < best).sum())} of {len(pace)} ({metric.capitalize()})")
    large = []
    for metric in ("mahalanobis", "frobenius"):
        best, pace = best_of(("ssp", "separate", "adaptive"), (1.0, 2.0, 10.0), metric)
        large.append(span(best / pace))
    private = regression[~regression["method"].str.startswith("ols")]
    best_method = private.loc[private.groupby("rho")["mse_mean"].idxmin(), "method"]
    pace_rows = regression[regression["method"] == "least squares from pace"]
    rt = runtime[(runtime["dataset"] == "breast_cancer") & (runtime["method"] == "pace")]
    return {
        "pace_ggm.variants.reps": _reps("pace_ggm_variants", "pace_ggm_variants.csv"),
        "pace_ggm.errors.shown": (f"{sum(r in PACE_GGM_ERRORS_SHOWN for r in set(errors['rho']))}"
                                  f" of the {len(set(errors['rho']))}"),
        "pace_ggm.structure.id": structure_of("record id as a 32nd column (d = 32)"),
        "pace_ggm.structure.as_run": structure_of("as run: d = 31, centered, clipped"),
        "pace_ggm.structure.paper": f"{fmt(PAPER_PACE_GGM_STRUCTURE[2])} and "
                               f"{fmt(PAPER_PACE_GGM_STRUCTURE[5])}",
        "pace_ggm.clipped": share(float(structure.loc[structure["variant"] == "as run: d = 31, "
                                                 "centered, clipped",
                                                 "outside_box_after_centering"].iloc[0]), 1),
        "pace_ggm.honest.summary": f"we measure {summary}",
        "pace_ggm.reps": _reps_of(bc),
        "pace_ggm.variants.times": fmt(float(_reps("pace_ggm_variants", "pace_ggm_variants.csv"))
                                       / PAPER_REPS["pace_ggm"]),
        "pace_ggm.honest.2se": _within_count(_cells_pace_ggm(False), None, None, the=True),
        "pace_ggm.honest.30": _within_count(_cells_pace_ggm(False), None,
                                            RELATIVE_TOLERANCE["pace_ggm"]),
        "pace_ggm.honest.gap_passed": _largest_gap_within(_cells_pace_ggm(False),
                                                          RELATIVE_TOLERANCE["pace_ggm"]),
        "pace_ggm.measured.small": span(measured[measured["rho"] == 1e-4]["measured_offdiag_mean"]),
        "pace_ggm.measured.large": span(measured[measured["rho"] == 10.0]["measured_offdiag_mean"]),
        "pace_ggm.paper_choices.summary": choices,
        "pace_ggm.paper_choices.gap_se": ", ".join(gaps),
        "pace_ggm.variants.failed": failed_text,
        "pace_ggm.vs_ssp.small": both("pace", "ssp", (1e-4,)),
        "pace_ggm.vs_ssp.mid": both("pace", "ssp", (1e-2,)),
        "pace_ggm.vs_ssp.large": both("pace", "ssp", (10.0,)),
        "pace_ggm.vs_best.small": " and ".join(ahead),
        "pace_ggm.vs_diagonal.small": both("diagonal", "pace", (1e-4, 1e-3)),
        "pace_ggm.vs_best.large": " and ".join(large),
        "pace_ggm.seconds": span(rt["seconds_mean"]),
        "pace_ggm.paper_seconds": span([float(v.split()[0]) for v in PAPER_PACE_GGM_SECONDS.values()]),
        "pace_ggm.regression.adassp_best": f"{int((best_method == 'adassp').sum())} of the "
                                           f"{len(best_method)}",
        "pace_ggm.regression.pace_max": fmt(float(pace_rows["mse_max"].max()))
        if "mse_max" in pace_rows else "–",
        "pace_ggm.regression.ols": fmt(float(regression[regression["method"].str.startswith(
            "ols")]["mse_mean"].iloc[0])),
    }


# Wang, Xu & He


def _values_thresholding() -> dict:
    errors = read("thresholding", "thresholding_errors.csv")
    settings = read("thresholding", "thresholding_settings.csv")
    trend = read("thresholding", "thresholding_trend.csv")
    det = read("thresholding_detectable", "thresholding_errors.csv")
    det_model = read("thresholding_detectable", "thresholding_settings.csv").iloc[0]
    private = errors[errors["epsilon"] != "non-private"]
    largest_n = max(errors["n"])
    ratios = []
    for _, model in settings.iterrows():
        top = private[(private["p"] == model["p"]) & (private["sr"] == model["sr"])
                      & (private["n"] == largest_n)]
        ratios.extend(top["threshold_mean"] / (float(model["gamma"]) / 50))
    sparsity = errors[(errors["panel"] == "sparsity") & (errors["epsilon"] != "non-private")]
    dimension = errors[(errors["panel"] == "dimension") & (errors["epsilon"] != "non-private")]
    privacy = errors[(errors["panel"] == "privacy") & (errors["epsilon"] != "non-private")]
    smallest_n = min(errors["n"])
    det_private = det[det["epsilon"] != "non-private"]
    det_np = det[det["epsilon"] == "non-private"]
    first = []
    for epsilon in ("0.5", "1.0", "2.0"):
        rows = det_private[(det_private["epsilon"].astype(str) == epsilon)
                           & (det_private["kept_offdiagonal_mean"] > 0)]
        first.append(f"{int(rows['n'].min()):,}" if len(rows) else "none")
    det_large = det_private[det_private["n"] == max(det["n"])]
    per_setting = trend[trend["p"].astype(str) != "all"]
    return {
        "thresholding.reps": _reps("thresholding", "thresholding_errors.csv"),
        "paper.reps.thresholding": str(PAPER_REPS["thresholding"]),
        "thresholding.paper_model.kept": fmt(float(private["kept_offdiagonal_mean"].max())),
        "thresholding.paper_model.ratio": span(ratios),
        "thresholding.detectable.model": (
            f"shift λ = {fmt(det_model['shift'])} instead of the paper's 50, "
            f"p = {int(det_model['p'])}, the {int(det_model['true_offdiagonal_nonzeros'])} "
            "off-diagonal non-zeros of our draw counted over both triangles"),
        "thresholding.detectable.shift": fmt(det_model["shift"]),
        "thresholding.detectable.correlation": fmt(det_model["largest_correlation"], 2),
        "thresholding.detectable.nonzeros": str(int(det_model["true_offdiagonal_nonzeros"])),
        "thresholding.detectable.reps": _reps("thresholding_detectable", "thresholding_errors.csv"),
        "thresholding.detectable.tpr.largest": ", ".join(share(v, 1) for v in det_large["tpr_mean"]),
        "thresholding.detectable.fdp.private": share(float(det_private["fdp_mean"].max()), 1),
        "thresholding.detectable.first_n": ", ".join(first),
        "thresholding.detectable.tpr.nonprivate": " and ".join(
            share(_one(det_np, "tpr_mean", n=n), 1) for n in (min(det["n"]), max(det["n"]))),
        "thresholding.detectable.fdp.nonprivate": span([100 * v for v in det_np["fdp_mean"]]) + " %",
        "thresholding.detectable.error.1": fmt(float(det_large.loc[
            det_large["epsilon"].astype(float) == 1.0, "rel_spectral_mean"].iloc[0]), 2),
        "thresholding.detectable.error.np": fmt(_one(det_np, "rel_spectral_mean", n=max(det["n"])), 2),
        "thresholding.claim.sr.largest": listed(sparsity[sparsity["n"] == largest_n]
                                       .sort_values("sr")["rel_spectral_mean"]),
        "thresholding.claim.sr.smallest": listed(sparsity[sparsity["n"] == smallest_n]
                                        .sort_values("sr")["rel_spectral_mean"]),
        "thresholding.claim.p_slopes": span(trend[trend["p"].astype(str) == "all"]["slope_vs_p"]),
        "thresholding.claim.p.smallest": fmt(_one(dimension, "rel_spectral_mean", n=smallest_n, p=50)),
        "thresholding.claim.p.largest": fmt(_one(dimension, "rel_spectral_mean", n=smallest_n, p=500)),
        "thresholding.claim.eps": listed(privacy[privacy["n"] == smallest_n]["rel_spectral_mean"], 2),
        "thresholding.claim.n_slopes": span(per_setting[per_setting["epsilon"] != "non-private"]
                                   ["slope_vs_n"].astype(float)),
    }


def _reproduction():
    """``dpggm.experiments.reproduction`` (from the source tree beside this page when dpggm
    is not installed): the CI check's constants."""
    _registry()
    import dpggm.experiments.reproduction as module
    return module


def _values_settings() -> dict:
    """The constants the page names: the CI check's, the summary's tolerances and the
    papers' repetitions (each from the one place the code uses)."""
    check = _reproduction()
    cpus = sorted({(_environment(name) or {}).get("cpu_count") for name in _registry()} - {None})
    return {
        "check.z": fmt(check.Z_TOLERANCE),
        "check.false_alarm": sci(check.GLOBAL_FALSE_ALARM),
        "summary.z": fmt(Z_AGREEMENT),
        "summary.coverage": f"{100 * math.erf(Z_AGREEMENT / math.sqrt(2)):.0f} %",
        **{f"tolerance.{name}": _tolerance_text(t) for name, t in RELATIVE_TOLERANCE.items()},
        "covariance_perturbation.na": str(NA_ABOVE),
        **{f"paper.reps.{name}": str(reps) for name, reps in PAPER_REPS.items()},
        "machine.cpus": "/".join(cpus),
    }


def _values_summary() -> dict:
    honest = _reps("private_precision", "private_precision_errors.csv", method="DP-RP")
    paper = _reps("private_precision_paper", "private_precision_paper_setting.csv",
                  setting="paper")
    pace_tolerance = RELATIVE_TOLERANCE["pace_ggm"]
    return {
        "summary.gap_passed.pace_ggm.choices": _largest_gap_within(_cells_pace_ggm(True),
                                                                  pace_tolerance),
        "summary.gap_passed.pace_ggm.spambase": _largest_gap_within(
            _cells_pace_ggm_registry(PACE_REGISTRY_PAPER_CHOICES), pace_tolerance),
        "summary.notes": (
            f"Su, Guo & Zhang's runs have {honest} (honest) and {paper} "
            f"(the paper's setting) repetitions per cell, against the paper's "
            f"{PAPER_REPS['private_precision']}; Guo et al.'s "
            "Table 1(b) post hoc row has "
            f"{_reps('noisy_data_1b_variants', 'noisy_data_1b_variants.csv')}, against the "
            f"paper's {PAPER_REPS['noisy_data']}."),
    }


VALUE_SOURCES = (_values_settings, _values_summary, _values_lda, _values_private_precision, _values_covariance_perturbation, _values_noisy_data, _values_pace_ggm,
                 _values_thresholding)


def values() -> dict[str, str]:
    """Every ``{{name}}`` of the template, as text."""
    found: dict[str, str] = {}
    for source in VALUE_SOURCES:
        found.update(source())
    return found


TABLES = {
    "runs": runs_table,
    **{f"run-{name}": (lambda name=name: run_table(name)) for name in _registry()},
    "private_precision-settings": private_precision_settings,
    **{f"private_precision-rp-{m}": (lambda m=m: private_precision("DP-RP", m)) for m in (1, 2, 3)},
    **{f"private_precision-agl-{m}": (lambda m=m: private_precision("DP-AGL", m)) for m in (2, 3, 4)},
    "private_precision-raw": private_precision_raw,
    "private_precision-trend": private_precision_trend,
    "private_precision-roc": private_precision_roc,
    "covariance_perturbation-pure": lambda: covariance_perturbation("pure"),
    "covariance_perturbation-approx": lambda: covariance_perturbation("approx"),
    "noisy_data-1a": lambda: noisy_data("1a"),
    "noisy_data-1b": lambda: noisy_data("1b"),
    "pace_ggm-measured": pace_ggm_measured,
    "pace_ggm-other-measured": pace_ggm_other_measured,
    "pace_ggm-mahalanobis": lambda: pace_ggm_errors("mahalanobis"),
    "pace_ggm-frobenius": lambda: pace_ggm_errors("frobenius"),
    "pace_ggm-regression": pace_ggm_regression,
    "pace_ggm-registry": pace_registry,
    "private_precision-lda": ridge_lda,
    "thresholding-errors": thresholding,
    "thresholding-paper-model": thresholding_paper_model,
    "thresholding-detectable": thresholding_detectable,
    "thresholding-detectable-model": thresholding_detectable_model,
    "summary": summary,
    "private_precision-steps": private_precision_steps,
    "private_precision-causes": private_precision_causes,
    "private_precision-paper-rp": lambda: private_precision_paper("DP-RP"),
    "private_precision-paper-agl": lambda: private_precision_paper("DP-AGL"),
    "noisy_data-1b-causes": noisy_data_causes,
    "pace_ggm-variants": pace_ggm_variants,
    "pace_ggm-variant-effects": pace_ggm_variant_effects,
    "pace_ggm-structure": pace_ggm_structure,
    "thresholding-trend": thresholding_trend,
    "real-data": real_data,
}

MARKER = re.compile(r"(<!-- BEGIN table:(?P<name>[\w.-]+) -->\n)(.*?)(<!-- END table:(?P=name) -->)",
                    re.S)


TEMPLATE = HERE / "reproduction.md.in"
PLACEHOLDER = re.compile(r"{{([\w.-]+)}}")


def render(template: str) -> str:
    """The page: ``template`` with every table marker filled and every ``{{name}}``
    replaced by its value; an unknown table or value is an error."""
    unknown = [m.group("name") for m in MARKER.finditer(template) if m.group("name") not in TABLES]
    if unknown:
        raise KeyError(f"unknown tables: {unknown}")
    text = MARKER.sub(lambda m: m.group(1) + "\n" + TABLES[m.group("name")]() + "\n\n"
                      + m.group(4), template)
    found = values()
    missing = sorted({m.group(1) for m in PLACEHOLDER.finditer(text)} - set(found))
    if missing:
        raise KeyError(f"unknown values: {missing}")
    return PLACEHOLDER.sub(lambda m: found[m.group(1)], text)


def main() -> int:
    try:
        text = render(TEMPLATE.read_text(encoding="utf-8"))
    except KeyError as error:
        print(error, file=sys.stderr)
        return 1
    PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
