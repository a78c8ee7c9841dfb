"""The reproduction page's runs: how each is made at full size, and the reduced re-run that
checks the committed numbers against the code as it is now.

``docs/reproduction/`` holds one directory per run (the CSV files and figures a paper
experiment wrote); ``docs/reproduction.md`` is built from them. :data:`RUNS` names every
run with

* its **full-size** call (what wrote the committed files; run it again with
  ``python3 -m dpggm.experiments.reproduction run NAME``, or ``run --all``), and
* a **reduced** re-run: a few of its cells and repetitions at the full run's settings,
  small enough to run in continuous integration
  (``python3 -m dpggm.experiments.reproduction check [NAME ...]``).

How the check decides. Every repetition of every cell draws from a stream keyed by the
cell and the repetition's index (:func:`~dpggm.experiments._common.repetition_rng`), so a
reduced re-run's ``k`` repetitions of a cell are the committed run's first ``k`` as long
as the code is the code that wrote the files. A cell's committed mean ``m`` (over ``N``
repetitions, standard deviation ``s`` from the committed standard error or standard
deviation, or the re-run's when that is larger: a count whose committed repetitions
happened to agree has a spread of zero that measures nothing) and the re-run's mean ``r``
(over ``k``) agree when

    ``|r - m| <= Z * s * sqrt(1/k + 1/N) + 1e-9 * max(1, |m|)``

with ``Z`` = :data:`Z_TOLERANCE` = 4: four standard errors of the difference of two
independent means (the last term only absorbs floating-point rounding). The bound holds
whether or not the streams are shared: with the same code the re-run's repetitions are a
subset of the committed ones and the difference is smaller than for independent draws;
after a change of the code the re-run is a fresh sample, and a difference beyond four
standard errors (probability about 6e-5 per cell for normal means) says that the
committed numbers are no longer what the code gives. A cell committed from a single
repetition has no spread: the re-run of that repetition must repeat it (to rounding).
Cells the committed run could not solve in any repetition must fail in the re-run too,
and a cell missing from the committed files fails.
Each comparison also sums ``z² = ((r - m) / (s sqrt(1/k + 1/N)))²`` over the cells that
moved (a cell repeated to rounding adds nothing) and fails when the sum exceeds the
1 - :data:`GLOBAL_FALSE_ALARM` quantile of a chi-square with as many degrees of freedom
as cells that moved: a change that moves many cells by one or two standard errors each is
caught although no single cell crosses ``Z``.

Privacy: evaluation code on synthetic and public data; nothing here is a release.
"""

from __future__ import annotations

import argparse
import importlib
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpggm.experiments.runner import INTERRUPTED_AFTER_WRITING

__all__ = [
    "GLOBAL_FALSE_ALARM",
    "RUNS",
    "Z_TOLERANCE",
    "CellCheck",
    "Comparison",
    "ReproductionRun",
    "check_run",
    "compare_tables",
    "default_root",
    "main",
    "regenerate",
]

#: Standard errors of the difference a reduced re-run may be from a committed mean.
Z_TOLERANCE = 4.0
#: False-alarm probability of each comparison's chi-square test over all its cells.
GLOBAL_FALSE_ALARM = 1e-4
#: Relative floating-point slack (the CSV files keep every digit of a float).
ROUNDING = 1e-9


def default_root() -> Path:
    """``docs/reproduction`` under the working directory (the repository root, where the
    commands are run), else that of the source tree this package was imported from."""
    here = Path.cwd() / "docs" / "reproduction"
    if here.is_dir():
        return here
    return Path(__file__).resolve().parents[3] / "docs" / "reproduction"


@dataclass(frozen=True)
class Comparison:
    """Which cells of one committed CSV file the reduced re-run checks.

    Attributes
    ----------
    file : str
        The file in the run's directory (and the key of the reduced re-run's table).
    keys : tuple of str
        The columns that identify a cell.
    metrics : tuple of str
        For each ``m``: the committed mean ``m_mean`` and its spread ``m_se`` (standard
        error, ``spread="se"``) or ``m_sd`` (standard deviation, ``spread="sd"``).
    spread : {"se", "sd"}
    count : str
        The column with the number of repetitions (``n_failed`` is subtracted when the
        file has it).
    where : mapping, optional
        ``{column: allowed values}``: only these rows are compared.
    """

    file: str
    keys: tuple[str, ...]
    metrics: tuple[str, ...]
    spread: str = "se"
    count: str = "n_reps"
    where: Mapping[str, Sequence[Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class ReproductionRun:
    """One run of the reproduction page.

    Attributes
    ----------
    name : str
        Its directory under ``docs/reproduction``.
    paper : str
        The paper and what the run reproduces.
    full : callable
        ``full(out_dir=..., overwrite=...)``: the full-size run, writing its files.
    command : str
        The full-size call as Python (what :func:`regenerate` runs).
    reduced : callable
        ``reduced() -> {file name: DataFrame}``: the reduced re-run's tables.
    reduced_size : str
        What the reduced re-run runs, in words.
    comparisons : tuple of Comparison
    repeats : bool
        Whether the reduced re-run is the full run itself, from the same seeds: then every
        cell must be repeated to rounding, not within its Monte-Carlo error (any change of
        the code that moves a number, however little, says that the committed files are no
        longer what the code gives).
    """

    name: str
    paper: str
    full: Callable[..., Any]
    command: str
    reduced: Callable[[], Mapping[str, pd.DataFrame]]
    reduced_size: str
    comparisons: tuple[Comparison, ...]
    repeats: bool = False


def _call(target: str, **kwargs: Any) -> Any:
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function)(**kwargs)


def _full(target: str, **preset: Any) -> Callable[..., Any]:
    def run(*, out_dir: Any, overwrite: bool = False) -> Any:
        return _call(target, **preset, out_dir=out_dir, overwrite=overwrite)

    return run


def _command(target: str, **preset: Any) -> str:
    arguments = ", ".join(f"{k}={v!r}" for k, v in preset.items())
    return f"{target.replace(':', '.')}({arguments})"


def _renamed(tables: Mapping[str, pd.DataFrame], names: Mapping[str, str]) -> dict:
    return {file: tables[key] for key, file in names.items()}


# ---------------------------------------------------------------------------------------
# the runs

_PRIVATE_PRECISION = "dpggm.experiments.private_precision:run_private_precision"
_COVARIANCE_PERTURBATION = "dpggm.experiments.covariance_perturbation:run_covariance_perturbation"
_NOISY_DATA = "dpggm.experiments.noisy_data:run_noisy_data"
_NOISY_DATA_1B_VARIANTS = "dpggm.experiments.noisy_data:run_table_1b_variants"
_PACE_GGM = "dpggm.experiments.pace_ggm:run_pace_ggm"
_PACE_GGM_VARIANTS = "dpggm.experiments.pace_ggm:run_pace_ggm_variants"
_THRESHOLDING = "dpggm.experiments.thresholding:run_thresholding"
_PACE_REGISTRY = "dpggm.experiments.pace_ggm:run_pace_registry_data"
_RIDGE_LDA = "dpggm.experiments.private_precision:run_ridge_precision_lda"
_NORMS = ("rel_l1", "rel_fro", "rel_spectral")
_WDBC_IDS = "docs/reproduction/pace_ggm/wdbc_ids.csv"


def _wdbc_ids() -> str:
    return str(default_root() / "pace_ggm" / "wdbc_ids.csv")


def _private_precision_reduced() -> dict[str, pd.DataFrame]:
    tables = _call(_PRIVATE_PRECISION, full=True, repetitions=1, models=(2, 4),
                   sample_sizes=(100, 400), epsilons=(0.3, 2.0), roc_repetitions=5)
    return _renamed(tables, {"errors": "private_precision_errors.csv",
                             "roc_auc": "private_precision_roc_auc.csv"})


def _private_precision_paper_reduced() -> dict[str, pd.DataFrame]:
    tables = _call(_PRIVATE_PRECISION, full=True, repetitions=1, roc=False, models=(3,),
                   sample_sizes=(400,), epsilons=(0.5, 2.0),
                   settings=("data-max", "data-max+cv", "paper"))
    return _renamed(tables, {"paper_setting": "private_precision_paper_setting.csv"})


def _covariance_perturbation_reduced(ratio: float) -> Callable[[], dict[str, pd.DataFrame]]:
    def reduced() -> dict[str, pd.DataFrame]:
        tables = _call(_COVARIANCE_PERTURBATION, full=True, repetitions=1, ratios=(ratio,),
                       epsilons=(0.5,), methods=("Gaussian", "Laplace"))
        return _renamed(tables, {"errors": "covariance_perturbation_errors.csv"})

    return reduced


def _noisy_data_1a_reduced() -> dict[str, pd.DataFrame]:
    from dpggm.experiments.noisy_data import GWISHART_ITER, run_table_1a

    table, _, _ = run_table_1a(repetitions=2, sample_sizes=(50, 500), snr_levels=(40.0, 20.0),
                               gwishart_iter=GWISHART_ITER)
    return {"noisy_data_table_1a.csv": table}


def _noisy_data_1b_reduced() -> dict[str, pd.DataFrame]:
    from dpggm.experiments.noisy_data import run_table_1b

    # full=False: no noise, 60 and 20 dB (three of the six levels, on the same streams).
    table, _, _ = run_table_1b(full=False, repetitions=1, sparsities=(0.95,))
    return {"noisy_data_table_1b.csv": table}


def _noisy_data_1b_variants_reduced() -> dict[str, pd.DataFrame]:
    from dpggm.experiments.noisy_data import run_table_1b_variants

    tables = run_table_1b_variants(
        repetitions=1, sparsities=(0.95,), snr_levels=(20.0,),
        variants=("the paper's diagonal (margin 1e-6)", "penalty factor 0.1",
                  "like for like: penalty factor 0.1, the paper's diagonal"))
    return {"noisy_data_1b_variants.csv": tables["variants"]}


def _pace_ggm_reduced() -> dict[str, pd.DataFrame]:
    tables = _call(_PACE_GGM, full=True)
    return _renamed(tables, {"errors": "pace_ggm_errors.csv", "measured": "pace_ggm_measured.csv",
                             "regression": "pace_ggm_regression.csv"})


def _pace_ggm_variants_reduced() -> dict[str, pd.DataFrame]:
    tables = _call(_PACE_GGM_VARIANTS, repetitions=3, ids=_wdbc_ids())
    return _renamed(tables, {"variants": "pace_ggm_variants.csv"})


def _ridge_lda_reduced() -> dict[str, pd.DataFrame]:
    tables = _call(_RIDGE_LDA, repetitions=3)
    return _renamed(tables, {"errors": "ridge_precision_lda_errors.csv"})


def _pace_registry_reduced() -> dict[str, pd.DataFrame]:
    tables = _call(_PACE_REGISTRY, repetitions=3)
    return _renamed(tables, {"measured": "pace_registry_data_measured.csv"})


def _thresholding_reduced() -> dict[str, pd.DataFrame]:
    tables = _call(_THRESHOLDING, full=True, repetitions=2,
                   panels=("sparsity", "dimension", "privacy"), sample_sizes=(1000, 30_000),
                   dimensions=(50, 200))
    return _renamed(tables, {"errors": "thresholding_errors.csv"})


def _thresholding_detectable_reduced() -> dict[str, pd.DataFrame]:
    tables = _call(_THRESHOLDING, full=True, repetitions=5, panels=("detectable",))
    return _renamed(tables, {"errors": "thresholding_errors.csv"})


def _covariance_perturbation_run(name: str, ratio: float, repetitions: int) -> ReproductionRun:
    preset = {"full": True, "repetitions": repetitions, "ratios": (ratio,)}
    return ReproductionRun(
        name=name,
        paper=f"Wang, Huai & Xu, Tables 1-2, r = {ratio:g}",
        full=_full(_COVARIANCE_PERTURBATION, **preset),
        command=_command(_COVARIANCE_PERTURBATION, **preset),
        reduced=_covariance_perturbation_reduced(ratio),
        reduced_size=f"r = {ratio:g}, ε = 0.5, Gaussian and Laplace, 1 repetition",
        comparisons=(Comparison("covariance_perturbation_errors.csv",
                                ("postprocessing", "family", "method", "epsilon", "r"),
                                ("rel_fro",)),),
    )


_RUN_LIST = (
    ReproductionRun(
        name="private_precision",
        paper="Su, Guo & Zhang, Tables 1-2 and Figure 1 (declared bounds, honest accounting)",
        full=_full(_PRIVATE_PRECISION, full=True, repetitions=5),
        command=_command(_PRIVATE_PRECISION, full=True, repetitions=5),
        reduced=_private_precision_reduced,
        reduced_size="models 2 and 4, n = 100 and 400, ε = 0.3 and 2, 1 repetition; "
                     "the ROC with 5 repetitions",
        comparisons=(
            Comparison("private_precision_errors.csv",
                       ("method", "penalty", "model", "n", "epsilon"), _NORMS),
            Comparison("private_precision_roc_auc.csv", ("model", "budget"), ("auc",)),
        ),
    ),
    ReproductionRun(
        name="private_precision_paper",
        paper="Su, Guo & Zhang, Tables 1-2 in the paper's setting, step by step",
        full=_full(_PRIVATE_PRECISION, full=True, repetitions=3, roc=False,
                   settings=("data-max", "data-max+cv", "paper")),
        command=_command(_PRIVATE_PRECISION, full=True, repetitions=3, roc=False,
                         settings=("data-max", "data-max+cv", "paper")),
        reduced=_private_precision_paper_reduced,
        reduced_size="model 3, n = 400, ε = 0.5 and 2, every step, 1 repetition",
        comparisons=(Comparison("private_precision_paper_setting.csv",
                                ("setting", "method", "model", "n", "epsilon"), _NORMS),),
    ),
    ReproductionRun(
        name="ridge_precision_lda",
        paper="Su, Guo & Zhang, Figure 2: LDA on Ionosphere with DP-RP (UCI Ionosphere "
              "from the R package mlbench: apt-get install r-cran-mlbench)",
        full=_full(_RIDGE_LDA, repetitions=50),
        command=_command(_RIDGE_LDA, repetitions=50),
        reduced=_ridge_lda_reduced,
        reduced_size="every privacy level, 3 repetitions",
        comparisons=(Comparison("ridge_precision_lda_errors.csv", ("budget",),
                                ("error",)),),
    ),
    _covariance_perturbation_run("covariance_perturbation", 1.0, 1),
    _covariance_perturbation_run("covariance_perturbation_r1.5", 1.5, 1),
    _covariance_perturbation_run("covariance_perturbation_r0.5", 0.5, 1),
    ReproductionRun(
        name="noisy_data_1a",
        paper="Guo et al., Table 1(a) (50-node chain) with G-Wishart",
        full=_full(_NOISY_DATA, full=True, repetitions=10, tables=("1a",)),
        command=_command(_NOISY_DATA, full=True, repetitions=10, tables=("1a",)),
        reduced=_noisy_data_1a_reduced,
        reduced_size="n = 50 and 500, no noise, 40 and 20 dB, 2 repetitions",
        comparisons=(Comparison(
            "noisy_data_table_1a.csv", ("n", "noise"),
            ("auc_corrected", "auc_uncorrected", "frobenius_corrected",
             "frobenius_uncorrected", "auc_reference_corrected", "auc_gwishart"),
            spread="sd"),),
    ),
    ReproductionRun(
        name="noisy_data_1b",
        paper="Guo et al., Table 1(b) (1000 nodes)",
        full=_full(_NOISY_DATA, full=True, repetitions=10, tables=("1b",)),
        command=_command(_NOISY_DATA, full=True, repetitions=10, tables=("1b",)),
        reduced=_noisy_data_1b_reduced,
        reduced_size="sparsity 95 %, no noise, 60 and 20 dB, 1 repetition",
        comparisons=(Comparison(
            "noisy_data_table_1b.csv", ("sparsity", "noise"),
            ("auc_corrected", "auc_uncorrected", "frobenius_corrected"), spread="sd"),),
    ),
    ReproductionRun(
        name="noisy_data_1b_variants",
        paper="Guo et al., Table 1(b): the penalty and the diagonal, one at a time",
        full=_full(_NOISY_DATA_1B_VARIANTS, repetitions=3),
        command=_command(_NOISY_DATA_1B_VARIANTS, repetitions=3),
        reduced=_noisy_data_1b_variants_reduced,
        reduced_size="sparsity 95 %: the paper's diagonal, factor 0.1 and both "
                         "(no noise and 20 dB), 1 repetition",
        comparisons=(Comparison("noisy_data_1b_variants.csv", ("variant", "sparsity", "noise"),
                                ("auc",), spread="sd"),),
    ),
    ReproductionRun(
        name="pace_ggm",
        paper="Ferrando et al., PACE-GGM and its baselines (Tables 4-5, Figures 1 and 5)",
        full=_full(_PACE_GGM, full=True),
        command=_command(_PACE_GGM, full=True),
        reduced=_pace_ggm_reduced,
        reduced_size="the full run itself (it takes seconds): every cell repeated to rounding",
        comparisons=(
            Comparison("pace_ggm_errors.csv", ("dataset", "rho", "method"),
                       ("mahalanobis", "frobenius")),
            Comparison("pace_ggm_measured.csv", ("dataset", "rho"),
                       ("measured_offdiag", "rounds")),
            Comparison("pace_ggm_regression.csv", ("dataset", "rho", "method"), ("mse",)),
        ),
        repeats=True,
    ),
    ReproductionRun(
        name="pace_ggm_variants",
        paper="Ferrando et al., Table 4 on breast cancer: one change at a time",
        full=lambda *, out_dir, overwrite=False: _call(
            _PACE_GGM_VARIANTS, repetitions=40, ids=_wdbc_ids(), out_dir=out_dir,
            overwrite=overwrite),
        command=_command(_PACE_GGM_VARIANTS, repetitions=40, ids=_WDBC_IDS),
        reduced=_pace_ggm_variants_reduced,
        reduced_size="every variant and ρ, 3 trials",
        comparisons=(Comparison("pace_ggm_variants.csv", ("variant", "rho"),
                                ("measured_offdiag", "frobenius")),),
    ),
    ReproductionRun(
        name="pace_registry_data",
        paper="Ferrando et al., Table 4 on spambase (UCI Spambase from the R package "
              "kernlab: apt-get install r-cran-kernlab)",
        full=_full(_PACE_REGISTRY, repetitions=10),
        command=_command(_PACE_REGISTRY, repetitions=10),
        reduced=_pace_registry_reduced,
        reduced_size="every setting and ρ, 3 trials",
        comparisons=(Comparison("pace_registry_data_measured.csv",
                                ("dataset", "setting", "rho"),
                                ("measured_offdiag", "frobenius")),),
    ),
    ReproductionRun(
        name="thresholding",
        paper="Wang, Xu & He, Figure 1 (the paper's model)",
        full=_full(_THRESHOLDING, full=True, panels=("sparsity", "dimension", "privacy")),
        command=_command(_THRESHOLDING, full=True, panels=("sparsity", "dimension", "privacy")),
        reduced=_thresholding_reduced,
        reduced_size="n = 1000 and 30 000, p = 50 and 200 in the dimension panel, "
                     "2 runs",
        comparisons=(Comparison("thresholding_errors.csv", ("panel", "p", "sr", "epsilon", "n"),
                                ("rel_spectral",)),),
    ),
    ReproductionRun(
        name="thresholding_detectable",
        paper="Wang, Xu & He, a model of ours where entries are detectable",
        full=_full(_THRESHOLDING, full=True, panels=("detectable",)),
        command=_command(_THRESHOLDING, full=True, panels=("detectable",)),
        reduced=_thresholding_detectable_reduced,
        reduced_size="every n and ε, 5 runs",
        comparisons=(Comparison("thresholding_errors.csv", ("panel", "p", "sr", "epsilon", "n"),
                                ("rel_spectral", "tpr", "fdp")),),
    ),
)


#: Every run of the reproduction page, by directory name.
RUNS: dict[str, ReproductionRun] = {run.name: run for run in _RUN_LIST}

#: The runs' earlier names (the papers' numbers in the source collection: ``seed000`` to
#: ``seed004``), still accepted on the command line.
RUN_ALIASES: dict[str, str] = {
    old_prefix + suffix: new_prefix + suffix
    for old_prefix, new_prefix in (("seed000", "private_precision"),
                                   ("seed001", "covariance_perturbation"),
                                   ("seed002", "noisy_data"), ("seed003", "pace_ggm"),
                                   ("seed004", "thresholding"))
    for suffix in ("", "_paper", "_r0.5", "_r1.5", "_1a", "_1b", "_1b_variants", "_variants",
                   "_detectable")
    if new_prefix + suffix in RUNS
}


# ---------------------------------------------------------------------------------------
# the check


@dataclass(frozen=True)
class CellCheck:
    """One metric of one cell: the committed and re-run means, and the verdict."""

    file: str
    cell: str
    metric: str
    committed: float
    spread: float
    committed_count: int
    rerun: float
    rerun_count: int
    tolerance: float
    ok: bool
    reason: str = ""

    @property
    def z(self) -> float:
        scale = self.tolerance / Z_TOLERANCE if self.tolerance > 0 else math.nan
        return abs(self.rerun - self.committed) / scale if scale > 0 else math.nan


def _count(row: pd.Series, comparison: Comparison) -> int:
    count = int(row[comparison.count]) if comparison.count in row else 0
    if "n_failed" in row and np.isfinite(float(row["n_failed"])):
        count -= int(row["n_failed"])
    return count


def _failed(row: pd.Series) -> int:
    value = float(row.get("n_failed", 0))
    return int(value) if math.isfinite(value) else 0


def _sd(row: pd.Series, metric: str, comparison: Comparison, count: int) -> float:
    spread = float(row.get(f"{metric}_{comparison.spread}", math.nan))
    if comparison.spread == "se":
        spread *= math.sqrt(max(count, 0))
    return spread


def _select(frame: pd.DataFrame, comparison: Comparison) -> pd.DataFrame:
    for column, allowed in comparison.where.items():
        frame = frame[frame[column].isin(list(allowed))]
    return frame


def _key_text(row: pd.Series, keys: Sequence[str]) -> str:
    return ", ".join(f"{k}={row[k]}" for k in keys)


def _normalised_keys(frame: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Key columns as text, so that a CSV's ``0.1`` and a run's ``0.1`` (or ``"1.0"`` and
    ``1.0``) match."""
    frame = frame.copy()
    for key in keys:
        frame[key] = [_as_key(v) for v in frame[key]]
    return frame


def _as_key(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(number):
        return "nan"
    return repr(number)


def compare_tables(committed: pd.DataFrame, rerun: pd.DataFrame,
                   comparison: Comparison, *, repeat: bool = False) -> list[CellCheck]:
    """Check every cell of ``rerun`` against ``committed`` (see the module documentation);
    with ``repeat`` (the re-run is the committed run itself, from the same seeds) every
    cell must equal its committed value to rounding.

    Returns
    -------
    list of CellCheck
        One per (cell of the re-run, metric).
    """
    keys = list(comparison.keys)
    committed = _normalised_keys(_select(committed, comparison), keys)
    rerun = _normalised_keys(_select(rerun, comparison), keys)
    index = {tuple(row[k] for k in keys): row for _, row in committed.iterrows()}
    checks = []
    for _, row in rerun.iterrows():
        key = tuple(row[k] for k in keys)
        text = _key_text(row, keys)
        found = index.get(key)
        for metric in comparison.metrics:
            value = float(row[f"{metric}_mean"])
            k = _count(row, comparison)
            if found is None:
                checks.append(CellCheck(comparison.file, text, metric, math.nan, math.nan, 0,
                                        value, k, math.nan, False,
                                        "the committed file has no such cell"))
                continue
            mean = float(found[f"{metric}_mean"])
            n = _count(found, comparison)
            if not math.isfinite(mean) or not math.isfinite(value):
                # Unsolved in every repetition of one run: consistent when the other run
                # had unsolved repetitions too (a re-run of one repetition that failed
                # where the committed run failed in some), not when it solved them all.
                ok = math.isfinite(mean) == math.isfinite(value) or (
                    _failed(found) > 0 if math.isfinite(mean) else _failed(row) > 0)
                checks.append(CellCheck(comparison.file, text, metric, mean, math.nan, n, value,
                                        k, math.nan, ok,
                                        "" if ok else "solved in one run, not in the other"))
                continue
            if repeat:
                rounding = ROUNDING * max(1.0, abs(mean))
                ok = abs(value - mean) <= rounding
                checks.append(CellCheck(comparison.file, text, metric, mean,
                                        _sd(found, metric, comparison, n), n, value, k,
                                        rounding, ok, "" if ok else
                                        "the same run from the same seeds, not repeated: "
                                        "regenerate the run from this commit"))
                continue
            sd = _sd(found, metric, comparison, n)
            # A committed spread of zero from repetitions that happened to agree (a count
            # such as PACE-GGM's rounds) is no measure of the Monte-Carlo error: the
            # re-run's spread, when larger, stands in for it.
            rerun_sd = _sd(row, metric, comparison, k) if k > 1 else math.nan
            if math.isfinite(sd) and math.isfinite(rerun_sd):
                sd = max(sd, rerun_sd)
            rounding = ROUNDING * max(1.0, abs(mean))
            if n == 1 and k == 1 and not math.isfinite(sd):
                # One committed repetition has no spread to derive a tolerance from; the
                # re-run of that repetition (the same stream) must repeat it.
                ok = abs(value - mean) <= rounding
                checks.append(CellCheck(comparison.file, text, metric, mean, 0.0, n, value, k,
                                        rounding, ok, "" if ok else
                                        "one committed repetition, not repeated: regenerate "
                                        "the run with more repetitions"))
                continue
            if n < 1 or k < 1 or not math.isfinite(sd):
                checks.append(CellCheck(comparison.file, text, metric, mean, sd, n, value, k,
                                        math.nan, False,
                                        "no spread in the committed file: regenerate it"))
                continue
            tolerance = Z_TOLERANCE * sd * math.sqrt(1.0 / k + 1.0 / n) + rounding
            ok = abs(value - mean) <= tolerance
            checks.append(CellCheck(comparison.file, text, metric, mean, sd, n, value, k,
                                    tolerance, ok, "" if ok else "beyond the tolerance"))
    return checks


def _chi_square(checks: Sequence[CellCheck]) -> tuple[float, int, float]:
    """Sum of z² over the cells with a positive spread, its degrees of freedom and the
    threshold of the test."""
    from scipy.stats import chi2

    # A cell the re-run repeats to rounding (same code, same stream) adds nothing and
    # counts no degree of freedom: the test is over the cells that moved.
    values = [c.z ** 2 for c in checks if c.tolerance > 0 and c.spread > 0
              and math.isfinite(c.z)
              and abs(c.rerun - c.committed) > ROUNDING * max(1.0, abs(c.committed))]
    if not values:
        return 0.0, 0, math.inf
    return float(sum(values)), len(values), float(chi2.ppf(1 - GLOBAL_FALSE_ALARM, len(values)))


@dataclass
class RunCheck:
    """The verdict on one run: every cell checked, and the chi-square test per file."""

    run: ReproductionRun
    cells: list[CellCheck]
    chi_square: dict[str, tuple[float, int, float]]
    seconds: float

    @property
    def failures(self) -> list[CellCheck]:
        return [c for c in self.cells if not c.ok]

    @property
    def global_failures(self) -> list[str]:
        return [file for file, (value, _, limit) in self.chi_square.items() if value > limit]

    @property
    def ok(self) -> bool:
        return not self.failures and not self.global_failures and bool(self.cells)

    @property
    def repeated(self) -> int:
        """Cell metrics the re-run repeated to rounding (same code, same streams)."""
        return sum(1 for c in self.cells if math.isfinite(c.committed) and math.isfinite(c.rerun)
                   and abs(c.rerun - c.committed) <= ROUNDING * max(1.0, abs(c.committed)))

    def report(self, *, limit: int = 20) -> str:
        missing = sum(1 for c in self.cells if c.cell == _MISSING_FILE)
        checked = len(self.cells) - missing
        lines = [f"{self.run.name}: {checked} cell metrics checked "
                 f"({self.run.reduced_size}; {self.seconds:.0f} s): {self.repeated} repeated "
                 f"to rounding, {len(self.failures) - missing} beyond the tolerance"
                 + (f"; {missing} committed file{'s' if missing != 1 else ''} missing"
                    if missing else "")]
        for file, (value, df, threshold) in self.chi_square.items():
            verdict = "FAILS" if value > threshold else "ok"
            lines.append(f"  {file}: sum of z^2 = {value:.1f} over {df} cells "
                         f"(limit {threshold:.1f}): {verdict}")
        for c in self.failures[:limit]:
            if c.cell == _MISSING_FILE:
                lines.append(f"  {c.file}: {c.reason}")
                continue
            lines.append(
                f"  {c.file} [{c.cell}] {c.metric}: committed {c.committed:.6g} "
                f"(sd {c.spread:.3g}, N = {c.committed_count}), re-run {c.rerun:.6g} "
                f"(k = {c.rerun_count}), tolerance ±{c.tolerance:.3g}"
                + (f", z = {c.z:.1f}" if math.isfinite(c.z) else "") + f": {c.reason}")
        if len(self.failures) > limit:
            lines.append(f"  ... and {len(self.failures) - limit} more")
        if not self.cells:
            lines.append("  nothing was compared")
        return "\n".join(lines)


#: The cell of a :class:`CellCheck` that records a committed file as missing.
_MISSING_FILE = "(file)"


def check_run(run: ReproductionRun | str, *, root: Any = None) -> RunCheck:
    """Re-run ``run`` at its reduced size and compare it with its committed files.

    Parameters
    ----------
    run : ReproductionRun or str
        A run or the name of one in :data:`RUNS`.
    root : path, optional
        The directory of the runs' directories (default ``docs/reproduction``).

    Returns
    -------
    RunCheck
    """
    run = RUNS[run] if isinstance(run, str) else run
    directory = Path(root if root is not None else default_root()) / run.name
    missing = [c.file for c in run.comparisons if not (directory / c.file).is_file()]
    cells: list[CellCheck] = [
        CellCheck(file, _MISSING_FILE, "", math.nan, math.nan, 0, math.nan, 0, math.nan, False,
                  f"the committed file {directory / file} is missing")
        for file in missing
    ]
    chi_square: dict[str, tuple[float, int, float]] = {}
    if len(missing) == len(run.comparisons):
        # Nothing to compare with: no re-run (it can take minutes).
        return RunCheck(run, cells, chi_square, 0.0)
    started = time.perf_counter()
    tables = run.reduced()
    seconds = time.perf_counter() - started
    for comparison in run.comparisons:
        path = directory / comparison.file
        if comparison.file in missing:
            continue
        found = compare_tables(pd.read_csv(path), tables[comparison.file], comparison,
                               repeat=run.repeats)
        cells.extend(found)
        if not run.repeats:
            # (A run that must repeat every cell has no Monte-Carlo error to sum.)
            chi_square[comparison.file] = _chi_square(found)
    return RunCheck(run, cells, chi_square, seconds)


def regenerate(name: str, *, root: Any = None) -> Path:
    """Run ``name`` at full size into its directory under ``root`` (default
    ``docs/reproduction``), replacing the files it writes (all at once, atomically)."""
    run = RUNS[name]
    directory = Path(root if root is not None else default_root()) / run.name
    directory.mkdir(parents=True, exist_ok=True)
    run.full(out_dir=directory, overwrite=True)
    return directory


def main(argv: Sequence[str] | None = None) -> int:
    """``python3 -m dpggm.experiments.reproduction {list,run,check} [NAME ...] [--all]``."""
    parser = argparse.ArgumentParser(
        prog="python3 -m dpggm.experiments.reproduction",
        description="Regenerate the reproduction page's runs, or check them against a "
                    "reduced re-run of the code as it is now.")
    parser.add_argument("action", choices=("list", "run", "check"))
    parser.add_argument("names", nargs="*", help="runs (default: every run for check)")
    parser.add_argument("--all", action="store_true", help="every run")
    parser.add_argument("--root", default=None, help="default: docs/reproduction")
    arguments = parser.parse_args(argv)
    arguments.names = [RUN_ALIASES.get(name, name) for name in arguments.names]
    unknown = [name for name in arguments.names if name not in RUNS]
    if unknown:
        parser.error(f"unknown runs {unknown}; choose from {', '.join(RUNS)}")
    if arguments.action == "check" and arguments.root is not None \
            and not Path(arguments.root).is_dir():
        parser.error(f"--root must be a directory holding the runs' directories; "
                     f"{arguments.root!r} is not one")
    names = list(RUNS) if arguments.all or (arguments.action != "run" and not arguments.names) \
        else arguments.names
    if arguments.action == "list":
        for name in names:
            run = RUNS[name]
            print(f"{name}: {run.paper}\n  full: {run.command}\n  reduced: {run.reduced_size}")
        return 0
    if arguments.action == "run":
        if not names:
            parser.error("name the runs to regenerate, or pass --all")
        for done, name in enumerate(names):
            started = time.perf_counter()
            print(f"{name}: {RUNS[name].command}", flush=True)
            try:
                directory = regenerate(name, root=arguments.root)
            except KeyboardInterrupt as interrupt:
                # A run writes its files only when it ends, all at once (an interrupt while
                # they are moved in takes effect after the last one).
                complete = interrupt.args == (INTERRUPTED_AFTER_WRITING,)
                written = ", ".join(names[:done + complete]) or "none"
                state = ("its files were all written" if complete
                         else "its files are as they were")
                print(f"{name}: interrupted after {time.perf_counter() - started:.0f} s; "
                      f"{state} (regenerated: {written})", file=sys.stderr, flush=True)
                return 130
            print(f"{name}: written to {directory} in {time.perf_counter() - started:.0f} s",
                  flush=True)
        return 0
    failed = 0
    for name in names:
        result = check_run(name, root=arguments.root)
        print(result.report(), flush=True)
        failed += not result.ok
    print(f"{len(names) - failed} runs agree with a reduced re-run, {failed} do not")
    return 1 if failed else 0


if __name__ == "__main__":  # pragma: no cover - command line
    sys.exit(main())
