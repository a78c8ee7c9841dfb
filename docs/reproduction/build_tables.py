"""Fill the tables of docs/reproduction.md from the experiments' CSV files.

Every table of the page sits between ``<!-- BEGIN table:NAME -->`` and
``<!-- END table:NAME -->``; this script replaces what is between the two markers with the
table NAME built from ``docs/reproduction/seedNNN/*.csv`` (the files the runs wrote) and
the papers' published numbers (below, and ``paper_seed000_tables.csv``, parsed from the
paper's text). The prose around the markers is written by hand.

Usage::

    python3 docs/reproduction/build_tables.py        # rewrites docs/reproduction.md
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
PAGE = HERE.parent / "reproduction.md"

# Seed 001, Tables 1-2, synthetic columns (r = n/p); "NA" is the paper's "above 200".
PAPER_001 = {
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
# Seed 003: BreastCancerWisconsin (d = 32 in the paper), Table 4 (measured off-diagonal
# entries per trial) and Table 5 (seconds per trial, mean ± SE).
PAPER_003_MEASURED = {1e-4: 5.2, 1e-3: 5.6, 1e-2: 6.1, 0.1: 9.4, 1.0: 23.9, 2.0: 27.5, 10.0: 49.0}
PAPER_003_SECONDS = {1e-4: "0.19 ± 0.02", 1e-2: "0.20 ± 0.03", 1.0: "0.90 ± 0.17",
                     10.0: "1.78 ± 0.15"}
# Seed 003, Table 3 (BreastCancerWisconsin): d, n, mean |r|, max |r|, e_off, rank_eff.
PAPER_003_STRUCTURE = (32, 569, 0.383, 1.000, 0.739, 5.5)
# The tolerances of the summary table.
RELATIVE_TOLERANCE = {"000": 0.25, "001": 0.25, "003": 0.30}
AUC_TOLERANCE = 0.01
LIKE_FOR_LIKE_003 = "all of the paper's choices at once"
LIKE_FOR_LIKE_1B = "like for like: penalty factor 0.1, the paper's diagonal"


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


# ------------------------------------------------------------------ seed 000


def seed000(algorithm: str, model: int) -> str:
    """One model of the paper's Table 1 (DP-RP) or Table 2 (DP-AGL): ours beside the
    paper's, per norm."""
    errors = read("seed000", "seed000_errors.csv")
    if errors is None:
        return "*(not run)*"
    paper = pd.read_csv(HERE / "paper_seed000_tables.csv")
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
AGL_SMALL_PENALTY = "alpha=1*B^2/p"


def _within(ours: float, paper: float, tolerance: float) -> bool:
    """``ours`` within ``tolerance`` (a share) of ``paper``."""
    return bool(math.isfinite(ours) and paper > 0 and abs(ours / paper - 1) <= tolerance)


def _paper000() -> pd.DataFrame:
    return pd.read_csv(HERE / "paper_seed000_tables.csv")


def _seed000_pairs(frame: pd.DataFrame, algorithm: str) -> list[tuple[float, float, str]]:
    """(ours, paper, norm) for every cell of the paper's Table 1 (DP-RP) or 2 (DP-AGL)
    that ``frame`` (rows of one method) has."""
    paper = _paper000()
    paper = paper[paper["table"].astype(str) == ("1" if algorithm == "DP-RP" else "2")]
    pairs = []
    for _, cell in paper.iterrows():
        ours = frame[(frame["model"] == cell["model"]) & (frame["n"] == cell["n"])
                     & (frame["epsilon"] == cell["epsilon"])]
        if len(ours):
            pairs.append((float(ours[f"rel_{cell['norm']}_mean"].iloc[0]), float(cell["mean"]),
                          str(cell["norm"])))
    return pairs


def _seed000_honest(algorithm: str) -> pd.DataFrame | None:
    errors = read("seed000", "seed000_errors.csv")
    if errors is None:
        return None
    ours = errors[errors["method"] == algorithm]
    return ours[ours["penalty"] == AGL_PENALTY] if algorithm == "DP-AGL" else ours


def _seed000_step(step: str, algorithm: str) -> pd.DataFrame | None:
    frame = read("seed000_paper", "seed000_paper_setting.csv")
    if frame is None:
        return None
    return frame[(frame["setting"] == step) & (frame["method"] == algorithm)]


def seed000_paper(algorithm: str) -> str:
    """The paper's own setting (like for like) beside the paper, one row per cell."""
    ours = _seed000_step("paper", algorithm)
    if ours is None:
        return "*(not run)*"
    paper = _paper000()
    paper = paper[paper["table"].astype(str) == ("1" if algorithm == "DP-RP" else "2")]
    rows = []
    for model in sorted(set(paper["model"])):
        for _, cell in ours[ours["model"] == model].iterrows():
            row = {"model": model, "n": int(cell["n"]), "ε": f"{cell['epsilon']:g}"}
            for norm, label in (("l1", "ℓ1"), ("fro", "F"), ("spectral", "ℓ2")):
                published = paper[(paper["model"] == model) & (paper["n"] == cell["n"])
                                  & (paper["epsilon"] == cell["epsilon"]) & (paper["norm"] == norm)]
                row[f"{label} like for like"] = mean_se(cell[f"rel_{norm}_mean"],
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


def seed000_steps() -> str:
    """From the honest run to the paper's setting, one step at a time: the median ratio of
    our error to the paper's and the share of cells within the tolerance."""
    tolerance = RELATIVE_TOLERANCE["000"]
    steps = [("honest (the tables above)", None), ("1. + data-max normalisation", "data-max"),
             ("2. + cross-validated penalties", "data-max+cv"),
             ("3. + the classical formula's noise = like for like", "paper")]
    rows = []
    for label, step in steps:
        row = {"step": label}
        for algorithm, table in (("DP-RP", "Table 1"), ("DP-AGL", "Table 2")):
            frame = _seed000_honest(algorithm) if step is None else _seed000_step(step, algorithm)
            pairs = [] if frame is None else _seed000_pairs(frame, algorithm)
            if not pairs:
                return "*(not run)*"
            for norm, label_norm in (("l1", "ℓ1"), ("fro", "F"), ("spectral", "ℓ2")):
                ratios = [o / q for o, q, n in pairs if n == norm]
                row[f"{table} {label_norm}: median ours/paper"] = fmt(float(np.median(ratios)))
            within = sum(_within(o, q, tolerance) for o, q, _ in pairs)
            row[f"{table}: within ±{100 * tolerance:g} %"] = f"{within}/{len(pairs)}"
        rows.append(row)
    return markdown(pd.DataFrame(rows))


def _seed000_in_original_units(frame: pd.DataFrame, algorithm: str,
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


SEED000_STEPS = (("1. data-max normalisation", "data-max"),
                 ("2. cross-validated penalties", "data-max+cv"),
                 ("3. the classical formula's noise", "paper"))


def seed000_causes() -> str:
    """What each step to the paper's setting changes, cell by cell (the paper's models,
    every n and ε): the noise and the penalty in the data's units and the Frobenius
    error, each as the median (range) of its ratio to the previous step's."""
    rows = []
    for algorithm, table in (("DP-RP", "Table 1"), ("DP-AGL", "Table 2")):
        paper = _paper000()
        paper_models = set(paper.loc[paper["table"].astype(str) == table[-1], "model"])
        previous = _seed000_honest(algorithm)
        if previous is None:
            return "*(not run)*"
        previous = _seed000_in_original_units(previous, algorithm, None)
        for label, step in SEED000_STEPS:
            frame = _seed000_step(step, algorithm)
            if frame is None or not len(frame):
                return "*(not run)*"
            current = _seed000_in_original_units(frame, algorithm, step)
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


def seed000_raw() -> str:
    """The paper's own DP-AGL pipeline (the graphical lasso on the raw release): how often
    it had a solution, per model and penalty."""
    errors = read("seed000", "seed000_errors.csv")
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


def seed000_trend() -> str:
    trend = read("seed000", "seed000_trend.csv")
    if trend is None:
        return "*(not run)*"
    trend = trend[trend["norm"] == "fro"]
    rows = [{"method": r["method"], "penalty": r["penalty"], "model": r["model"],
             "slope vs n·ε (expected −1)": fmt(r["slope_vs_n_epsilon"]),
             "slope vs σ (expected +1)": fmt(r["slope_vs_sigma"]), "cells": r["n_cells"]}
            for _, r in trend.iterrows()]
    return markdown(pd.DataFrame(rows))


def seed000_roc() -> str:
    auc = read("seed000", "seed000_roc_auc.csv")
    if auc is None:
        return "*(not run)*"
    rows = [{"model": r["model"], "budget": r["budget"],
             "edge AUC ours": mean_se(r["auc_mean"], r["auc_se"]),
             "repetitions": int(r["n_reps"])} for _, r in auc.iterrows()]
    return markdown(pd.DataFrame(rows))


def seed000_settings() -> str:
    settings = read("seed000", "seed000_settings.csv")
    if settings is None:
        return "*(not run)*"
    rows = [{"model": r["model"], "p": r["p"], "declared row bound B": fmt(r["row_bound_B"]),
             "rows clipped": f"{100 * r['clipped_fraction_mean']:.2f} %",
             "ridge": fmt(r["ridge"])} for _, r in settings.iterrows()]
    return markdown(pd.DataFrame(rows))


# ------------------------------------------------------------------ seed 001


SHEFFET = "Wishart (Sheffet)"


def _seed001_cell(cell: pd.Series | None, method: str, epsilon: float) -> str:
    if cell is None:
        # The errors table leaves out what was not run: Sheffet's mechanism at ε ≥ 1.
        return "n/a (ε ≥ 1)" if method == SHEFFET and epsilon >= 1 else "–"
    if not math.isfinite(cell["rel_fro_mean"]):
        return f"no solution ({int(cell['n_failed'])}/{int(cell['n_reps'])})"
    if cell["rel_fro_mean"] > 200:
        text = "NA (> 200)"
    else:
        text = mean_se(cell["rel_fro_mean"], cell["rel_fro_se"], 4)
    if cell["n_failed"]:
        text += f" [{int(cell['n_failed'])} no solution]"
    return text


def seed001(family: str) -> str:
    errors = read_runs("seed001", "seed001_errors.csv")
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
            published = PAPER_001.get((key, method), {}).get(epsilon, ("–",) * 3)
            for ratio in ratios:
                for post, label in (("library repair", "ours"), ("none (paper)", "ours, raw")):
                    found = subset[(subset["epsilon"] == epsilon) & (subset["method"] == method)
                                   & (subset["r"] == ratio) & (subset["postprocessing"] == post)]
                    row[f"r={ratio:g} {label}"] = _seed001_cell(
                        found.iloc[0] if len(found) else None, method, epsilon
                    )
                if ratio in (0.5, 1.0, 1.5):
                    row[f"r={ratio:g} **paper**"] = published[(0.5, 1.0, 1.5).index(ratio)]
            rows.append(row)
    return markdown(pd.DataFrame(rows))


# ------------------------------------------------------------------ seed 002


def seed002(table: str) -> str:
    # A run of one table alone (seed002_1a/) replaces that table of the run of both.
    frame = read(f"seed002_{table}", f"seed002_table_{table}.csv")
    if frame is None:
        frame = read("seed002", f"seed002_table_{table}.csv")
    if frame is None:
        return "*(not run)*"
    key = "n" if table == "1a" else "sparsity"
    like = _seed002_like_for_like() if table == "1b" else None
    rows = []
    for _, r in frame.iterrows():
        row = {key: (int(r[key]) if key == "n" else f"{100 * r[key]:g} %"), "noise": r["noise"],
               "AUC corrected": mean_se(r["auc_corrected_mean"], r["auc_corrected_sd"]),
               "AUC uncorrected": mean_se(r["auc_uncorrected_mean"], r["auc_uncorrected_sd"])}
        if "auc_gwishart_mean" in frame:
            row["AUC G-Wishart"] = mean_se(r["auc_gwishart_mean"], r["auc_gwishart_sd"])
        if "auc_reference_corrected_mean" in frame:
            row["AUC like for like (paper's scoring)"] = mean_se(
                r["auc_reference_corrected_mean"], r["auc_reference_corrected_sd"])
        if like is not None:
            found = like[(like["sparsity"] == r["sparsity"]) & (like["noise"] == r["noise"])]
            row["AUC like for like"] = (mean_se(found["auc_mean"].iloc[0], found["auc_sd"].iloc[0])
                                        if len(found) else "–")
        row["AUC **paper**"] = fmt(r["auc_paper"])
        if r["noise"] != "no noise":
            row["ε honest (δ=1e-5)"] = fmt(r["epsilon_honest_mean"])
            row["ε paper accounting"] = fmt(r["epsilon_paper_mean"])
        else:
            row["ε honest (δ=1e-5)"] = row["ε paper accounting"] = "–"
        row["reps"] = int(r["n_reps"])
        rows.append(row)
    return markdown(pd.DataFrame(rows))


def _seed002_variants() -> pd.DataFrame | None:
    return read("seed002_1b_variants", "seed002_1b_variants.csv")


def _seed002_like_for_like() -> pd.DataFrame | None:
    variants = _seed002_variants()
    return None if variants is None else variants[variants["variant"] == LIKE_FOR_LIKE_1B]


def seed002_causes() -> str:
    """Table 1(b) without noise: what the penalty and the diagonal do to the AUC."""
    variants = _seed002_variants()
    if variants is None:
        return "*(not run)*"
    clean = variants[variants["noise"] == "no noise"]
    sparsities = list(dict.fromkeys(clean["sparsity"]))
    rows = []
    for variant, group in clean.groupby("variant", sort=False):
        row = {"variant": variant}
        for sparsity in sparsities:
            cell = group[group["sparsity"] == sparsity].iloc[0]
            row[f"{100 * sparsity:g} %"] = mean_se(cell["auc_mean"], cell["auc_sd"])
        edges = group.loc[group["sparsity"] == sparsities[-1], "edges_mean"].iloc[0]
        row["edges kept at 90 % (model: 49 950)"] = f"{edges:,.0f}"
        row["reps"] = int(group["n_reps"].iloc[0])
        rows.append(row)
    paper = {"variant": "**paper**"}
    for sparsity in sparsities:
        paper[f"{100 * sparsity:g} %"] = fmt(clean.loc[clean["sparsity"] == sparsity,
                                                       "auc_paper"].iloc[0])
    paper["edges kept at 90 % (model: 49 950)"] = "–"
    paper["reps"] = 10
    rows.append(paper)
    return markdown(pd.DataFrame(rows))


# ------------------------------------------------------------------ seed 003


def seed003_measured() -> str:
    measured = read("seed003", "seed003_measured.csv")
    runtime = read("seed003", "seed003_runtime.csv")
    if measured is None or runtime is None:
        return "*(not run)*"
    bc = measured[measured["dataset"] == "breast_cancer"]
    rt = runtime[(runtime["dataset"] == "breast_cancer") & (runtime["method"] == "pace")]
    like = _seed003_variant(LIKE_FOR_LIKE_003)
    d = int(bc["d"].iloc[0])
    rows = []
    for _, r in bc.iterrows():
        rho = float(r["rho"])
        seconds = rt[rt["rho"] == r["rho"]].iloc[0]
        paper = PAPER_003_MEASURED.get(rho, math.nan)
        row = {
            "ρ": f"{rho:g}",
            f"off-diagonal measured, ours (d = {d}, 10 trials)": mean_se(
                r["measured_offdiag_mean"], r["measured_offdiag_se"]),
        }
        if like is not None:
            found = like[like["rho"] == r["rho"]].iloc[0]
            row["like for like (d = 32, 40 trials)"] = mean_se(found["measured_offdiag_mean"],
                                                               found["measured_offdiag_se"])
        row["**paper** (d = 32, 10 trials)"] = fmt(paper)
        row["ours / paper"] = fmt(r["measured_offdiag_mean"] / paper)
        row["seconds per fit, ours"] = mean_se(seconds["seconds_mean"], seconds["seconds_se"])
        row["**paper** seconds"] = PAPER_003_SECONDS.get(rho, "–")
        rows.append(row)
    return markdown(pd.DataFrame(rows))


def _seed003_variant(variant: str) -> pd.DataFrame | None:
    variants = read("seed003_variants", "seed003_variants.csv")
    return None if variants is None else variants[variants["variant"] == variant]


def seed003_variants() -> str:
    """Measured off-diagonal entries on breast cancer, one change at a time."""
    variants = read("seed003_variants", "seed003_variants.csv")
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
    paper = {"variant": "**paper** (10 trials)", "d": 32}
    for rho in rhos:
        paper[f"ρ={rho:g}"] = fmt(PAPER_003_MEASURED.get(float(rho), math.nan))
    rows.append(paper)
    return markdown(pd.DataFrame(rows))


def seed003_structure() -> str:
    """The paper's Table 3 properties of the breast cancer data, ours beside the paper's."""
    structure = read("seed003_variants", "seed003_structure.csv")
    if structure is None:
        return "*(not run)*"
    shown = ("as run: d = 31, centred, clipped", "no diagnosis column (d = 30)",
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
            "values clipped": f"{100 * r['outside_box_after_centring']:.1f} %",
        })
    d, n, mean_r, max_r, e_off, rank_eff = PAPER_003_STRUCTURE
    rows.append({"data": "**paper** (BreastCancerWisconsin)", "d": d, "n": n,
                 "mean abs(r)": fmt(mean_r), "max abs(r)": f"{max_r:.3f}", "e_off": fmt(e_off),
                 "rank_eff": fmt(rank_eff), "e_off after clipping": "–", "values clipped": "–"})
    return markdown(pd.DataFrame(rows))


def seed003_other_measured() -> str:
    measured = read("seed003", "seed003_measured.csv")
    if measured is None:
        return "*(not run)*"
    others = measured[measured["dataset"] != "breast_cancer"]
    wide = others.pivot_table(index=["dataset", "d"], columns="rho", values="measured_offdiag_mean",
                              sort=False).reset_index()
    wide.columns = [c if not isinstance(c, float) else f"ρ={c:g}" for c in wide.columns]
    for column in wide.columns[2:]:
        wide[column] = [fmt(v) for v in wide[column]]
    return markdown(wide)


def seed003_errors(metric: str) -> str:
    errors = read("seed003", "seed003_errors.csv")
    if errors is None:
        return "*(not run)*"
    rows = []
    for (dataset, rho), group in errors.groupby(["dataset", "rho"], sort=False):
        if rho not in (1e-4, 1e-2, 1.0, 10.0):
            continue
        row = {"data set": dataset, "ρ": f"{rho:g}"}
        for _, r in group.iterrows():
            row[r["method"]] = mean_se(r[f"{metric}_mean"], r[f"{metric}_se"])
        rows.append(row)
    return markdown(pd.DataFrame(rows))


def seed003_regression() -> str:
    frame = read("seed003", "seed003_regression.csv")
    if frame is None:
        return "*(not run)*"
    rows = []
    for rho, group in frame.groupby("rho", sort=False):
        row = {"ρ": f"{rho:g}"}
        for _, r in group.iterrows():
            # The non-private fit is the same in every trial (its spread is rounding).
            exact = str(r["method"]).startswith("ols")
            row[r["method"]] = fmt(r["mse_mean"]) if exact else mean_se(r["mse_mean"], r["mse_se"])
        rows.append(row)
    return markdown(pd.DataFrame(rows))


# ------------------------------------------------------------------ seed 004


def seed004() -> str:
    errors = read("seed004", "seed004_errors.csv")
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


def seed004_paper_model() -> str:
    """What the private release keeps in the paper's model: its largest off-diagonal entry
    (at most 1/200 before the rescaling, i.e. gamma/50 after it, gamma = 1/(4 c^2) the
    variance) against the private threshold at the largest n."""
    errors, settings = read("seed004", "seed004_errors.csv"), read("seed004", "seed004_settings.csv")
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


def seed004_detectable() -> str:
    errors = read("seed004_detectable", "seed004_errors.csv")
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


def seed004_detectable_model() -> str:
    settings = read("seed004_detectable", "seed004_settings.csv")
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


def seed004_trend() -> str:
    trend = read("seed004", "seed004_trend.csv")
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

# Seed 002, Table 1: the paper's "±" (standard deviation over its 10 repetitions), by noise
# level (None: no noise) and n (a) or sparsity (b).
PAPER_002_SD = {
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
#: The papers' repetitions per cell (seed 001 reports one run).
PAPER_REPS = {"000": 50, "001": 1, "002": 10, "003": 10}
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
        return math.isfinite(cell["ours"]) and cell["ours"] > 200
    return _within(cell["ours"], cell["paper"], tolerance)


def _cells_000(algorithm: str, step: str | None) -> list[dict]:
    """Every published cell of seed 000's Table 1 (DP-RP) or 2 (DP-AGL) with ours."""
    frame = _seed000_honest(algorithm) if step is None else _seed000_step(step, algorithm)
    if frame is None:
        return []
    paper = _paper000()
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


def _cells_001(family: str) -> list[dict]:
    errors = read_runs("seed001", "seed001_errors.csv")
    if errors is None:
        return []
    ours = errors[errors["postprocessing"] == "library repair"]
    cells = []
    for (fam, method), by_epsilon in PAPER_001.items():
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


def _cells_002(table: str, like_for_like: bool) -> list[dict]:
    frame = read(f"seed002_{table}", f"seed002_table_{table}.csv")
    if frame is None:
        return []
    key = "n" if table == "1a" else "sparsity"
    if table == "1a":
        column = "auc_reference_corrected" if like_for_like else "auc_corrected"
        rows = [(r[key], r["noise"], r[f"{column}_mean"], r[f"{column}_sd"], r["n_reps"],
                 r["auc_paper"]) for _, r in frame.iterrows()]
    elif like_for_like:
        like = _seed002_like_for_like()
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
        paper_sd = PAPER_002_SD[table][snr][float(level) if table == "1b" else int(level)]
        cells.append({"ours": float(mean), "ours_se": float(sd) / math.sqrt(int(reps)),
                      "paper": float(published), "paper_se": paper_sd / math.sqrt(10),
                      "half_unit": 0.0005,
                      "group": "20 dB" if snr == 20.0 else "no noise to 40 dB"})
    return cells


def _cells_003(like_for_like: bool) -> list[dict]:
    if like_for_like:
        frame = _seed003_variant(LIKE_FOR_LIKE_003)
    else:
        frame = read("seed003", "seed003_measured.csv")
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
                      # The paper gives no spread for Table 4: its 10 trials are taken to
                      # spread as ours do.
                      "paper": PAPER_003_MEASURED[rho], "paper_se": sd / math.sqrt(10),
                      "half_unit": 0.05, "group": "ρ ≤ 0.1" if rho <= 0.1 else "ρ ≥ 1"})
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
    for group in dict.fromkeys(c["group"] for c in cells):
        mine = [c for c in cells if c["group"] == group]
        text = f"{group}: {sum(bool(_consistent(c)) for c in mine)}/{len(mine)}"
        if tolerance is not None:
            text += f" ({sum(bool(_near(c, tolerance)) for c in mine)})"
        parts.append(text)
    return "; ".join(parts)


SUMMARY_ROWS = (
    # paper, table, what was compared, cells, stated tolerance (ours) or None
    ("Seed 000", "Table 1 (DP-RP), models 1-3",
     "honest: declared bounds, fixed public penalties, exact calibration; 5 repetitions",
     lambda: _cells_000("DP-RP", None), RELATIVE_TOLERANCE["000"]),
    ("Seed 000", "Table 1 (DP-RP), models 1-3",
     "the paper's setting, the same closed-form algorithm: data-max normalisation, "
     "cross-validated ridge, the classical formula's noise; 3 repetitions",
     lambda: _cells_000("DP-RP", "paper"), RELATIVE_TOLERANCE["000"]),
    ("Seed 000", "Table 2 (DP-AGL), models 2-4",
     "honest (as above), dpggm's repaired release and adaptive ADMM; 5 repetitions",
     lambda: _cells_000("DP-AGL", None), RELATIVE_TOLERANCE["000"]),
    ("Seed 000", "Table 2 (DP-AGL), models 2-4",
     "the paper's inputs (normalisation, cross-validated α, classical noise) but "
     "**not its algorithm**: dpggm's repaired release and adaptive ADMM, not the paper's "
     "ADMM on the raw release; 3 repetitions",
     lambda: _cells_000("DP-AGL", "paper"), RELATIVE_TOLERANCE["000"]),
    ("Seed 001", "Table 1 (ε-DP), synthetic",
     "honest, dpggm's repaired release; the paper's data handling is not stated, so its "
     "setting is not run",
     lambda: _cells_001("epsilon-DP"), RELATIVE_TOLERANCE["001"]),
    ("Seed 001", "Table 2 ((ε, δ)-DP), synthetic", "as above",
     lambda: _cells_001("approx"), RELATIVE_TOLERANCE["001"]),
    ("Seed 002", "Table 1(a), AUC", "honest: scored against the true graph; 10 repetitions",
     lambda: _cells_002("1a", False), None),
    ("Seed 002", "Table 1(a), AUC",
     "the same fits scored as the paper scores (against the graphical lasso on the "
     "noiseless data); 10 repetitions",
     lambda: _cells_002("1a", True), None),
    ("Seed 002", "Table 1(b), AUC",
     "honest: penalty factor 0.5, diagonal margin 0.1; 10 repetitions",
     lambda: _cells_002("1b", False), None),
    ("Seed 002", "Table 1(b), AUC",
     "the paper's diagonal with the penalty factor 0.1, **chosen after seeing the "
     "variants** (post hoc); 3 repetitions",
     lambda: _cells_002("1b", True), None),
    ("Seed 003", "Table 4, breast cancer, off-diagonal entries measured",
     "honest: d = 31, declared ranges, centred and clipped; 10 trials",
     lambda: _cells_003(False), RELATIVE_TOLERANCE["003"]),
    ("Seed 003", "Table 4, breast cancer, off-diagonal entries measured",
     "the paper's choices: d = 32 with the record id, the data's own ranges, uniform "
     "sensitivity, not clipped; 40 trials",
     lambda: _cells_003(True), RELATIVE_TOLERANCE["003"]),
)


def _summary_rows() -> list[dict]:
    rows = []
    for paper, table, compared, cells_of, tolerance in SUMMARY_ROWS:
        cells = cells_of()
        rows.append({
            "paper": paper, "table": table, "compared": compared, "cells": len(cells),
            "within 2 SE of the difference": _count([_consistent(c) for c in cells]),
            "stated tolerance (ours)": ("–" if tolerance is None
                                        else f"±{100 * tolerance:g} %"),
            "within it": ("–" if tolerance is None
                          else _count([_near(c, tolerance) for c in cells])),
            "where (2 SE; stated tolerance in brackets)": _by_group(cells, tolerance),
        })
    return rows


def summary() -> str:
    """Per paper, table and run compared: the published cells, how many are consistent
    with ours within two standard errors of the difference, how many within our stated
    tolerance, and where (by column or regime) the agreement is."""
    return markdown(pd.DataFrame(_summary_rows()))


TABLES = {
    "env-000": lambda: environment("seed000"),
    "env-001": lambda: environment("seed001"),
    "env-002": lambda: environment("seed002"),
    "env-003": lambda: environment("seed003"),
    "env-004": lambda: environment("seed004"),
    "env-001-r0.5": lambda: environment("seed001_r0.5"),
    "env-001-r1.5": lambda: environment("seed001_r1.5"),
    "env-002-1a": lambda: environment("seed002_1a"),
    "env-002-1b": lambda: environment("seed002_1b"),
    "000-settings": seed000_settings,
    **{f"000-rp-{m}": (lambda m=m: seed000("DP-RP", m)) for m in (1, 2, 3)},
    **{f"000-agl-{m}": (lambda m=m: seed000("DP-AGL", m)) for m in (2, 3, 4)},
    "000-raw": seed000_raw,
    "000-trend": seed000_trend,
    "000-roc": seed000_roc,
    "001-pure": lambda: seed001("pure"),
    "001-approx": lambda: seed001("approx"),
    "002-1a": lambda: seed002("1a"),
    "002-1b": lambda: seed002("1b"),
    "003-measured": seed003_measured,
    "003-other-measured": seed003_other_measured,
    "003-mahalanobis": lambda: seed003_errors("mahalanobis"),
    "003-frobenius": lambda: seed003_errors("frobenius"),
    "003-regression": seed003_regression,
    "004-errors": seed004,
    "004-paper-model": seed004_paper_model,
    "004-detectable": seed004_detectable,
    "004-detectable-model": seed004_detectable_model,
    "env-004-detectable": lambda: environment("seed004_detectable"),
    "summary": summary,
    "000-steps": seed000_steps,
    "000-causes": seed000_causes,
    "000-paper-rp": lambda: seed000_paper("DP-RP"),
    "000-paper-agl": lambda: seed000_paper("DP-AGL"),
    "env-000-paper": lambda: environment("seed000_paper"),
    "002-1b-causes": seed002_causes,
    "env-002-1b-variants": lambda: environment("seed002_1b_variants"),
    "003-variants": seed003_variants,
    "003-structure": seed003_structure,
    "env-003-variants": lambda: environment("seed003_variants"),
    "004-trend": seed004_trend,
}

MARKER = re.compile(r"(<!-- BEGIN table:(?P<name>[\w.-]+) -->\n)(.*?)(<!-- END table:(?P=name) -->)",
                    re.S)


def main() -> int:
    text = PAGE.read_text(encoding="utf-8")
    unknown = [m.group("name") for m in MARKER.finditer(text) if m.group("name") not in TABLES]
    if unknown:
        print(f"unknown tables: {unknown}", file=sys.stderr)
        return 1
    text = MARKER.sub(lambda m: m.group(1) + "\n" + TABLES[m.group("name")]() + "\n\n"
                      + m.group(4), text)
    PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
