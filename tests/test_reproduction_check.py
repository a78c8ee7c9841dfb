"""The reproduction page stays true of the code: every run in docs/reproduction/ is re-run
at a reduced size from the code as it is and compared with its committed CSV files within
each cell's Monte-Carlo error (dpggm.experiments.reproduction).

The re-runs are marked ``reproduction`` and left out of the ordinary ``pytest`` run (they
take minutes); .ci/run runs them as its own step: ``python3 -m pytest -m reproduction``.
The unmarked tests below check the comparison itself on small hand-made tables.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpggm.experiments.reproduction import (
    RUNS,
    Z_TOLERANCE,
    Comparison,
    check_run,
    compare_tables,
    main,
)

ROOT = Path(__file__).resolve().parents[1] / "docs" / "reproduction"
COMPARISON = Comparison("x.csv", ("cell",), ("err",))


def _table(means, ses, n=10, failed=0):
    return pd.DataFrame({"cell": [f"c{i}" for i in range(len(means))], "err_mean": means,
                         "err_se": ses, "n_reps": n, "n_failed": failed})


def test_a_rerun_within_the_monte_carlo_error_passes_and_one_beyond_it_fails():
    committed = _table([1.0, 2.0], [0.1, 0.1])  # sd = 0.1 * sqrt(10)
    sd = 0.1 * math.sqrt(10)
    limit = Z_TOLERANCE * sd * math.sqrt(1 / 2 + 1 / 10)  # re-run of k = 2
    rerun = _table([1.0 + 0.99 * limit, 2.0 + 1.01 * limit], [0.1, 0.1], n=2)
    checks = compare_tables(committed, rerun, COMPARISON)
    assert [c.ok for c in checks] == [True, False]
    assert checks[0].tolerance == pytest.approx(limit, rel=1e-6)
    assert checks[1].z == pytest.approx(Z_TOLERANCE * 1.01, rel=1e-3)


def test_the_spread_may_be_a_standard_deviation_and_the_keys_match_across_types():
    committed = pd.DataFrame({"n": [50], "noise": ["20 dB"], "auc_mean": [0.9],
                              "auc_sd": [0.01], "n_reps": [10], "n_failed": [0]})
    rerun = committed.assign(n=[50.0], auc_mean=[0.9 + 3.9 * 0.01 * math.sqrt(1.1)], n_reps=[1])
    comparison = Comparison("t.csv", ("n", "noise"), ("auc",), spread="sd")
    assert all(c.ok for c in compare_tables(committed, rerun, comparison))
    rerun = rerun.assign(auc_mean=[0.9 + 4.1 * 0.01 * math.sqrt(1.1)])
    assert not any(c.ok for c in compare_tables(committed, rerun, comparison))


def test_a_deterministic_cell_must_repeat_to_rounding():
    committed = _table([0.5], [0.0])
    assert compare_tables(committed, _table([0.5 + 1e-12], [0.0], n=1), COMPARISON)[0].ok
    assert not compare_tables(committed, _table([0.5 + 1e-6], [0.0], n=1), COMPARISON)[0].ok


def test_missing_cells_unsolved_cells_and_missing_spreads_fail():
    committed = _table([1.0, math.nan], [0.1, math.nan], failed=[0, 10])
    rerun = pd.concat([_table([1.0, 0.7], [0.1, 0.1], n=2),
                       _table([1.0], [0.1]).assign(cell=["new"])])
    checks = {c.cell: c for c in compare_tables(committed, rerun, COMPARISON)}
    assert checks["cell=c0"].ok
    assert not checks["cell=c1"].ok and "solved" in checks["cell=c1"].reason
    assert not checks["cell=new"].ok and "no such cell" in checks["cell=new"].reason
    # A committed cell solved in some repetitions only, re-run once and unsolved: the same
    # pattern (the re-run's repetition is one the committed run could not solve).
    partial = _table([1.0], [0.1], n=5, failed=2)
    unsolved = _table([math.nan], [math.nan], n=1, failed=1)
    assert compare_tables(partial, unsolved, COMPARISON)[0].ok
    # Both unsolved: agreement.
    both = compare_tables(committed.iloc[[1]], _table([math.nan], [math.nan]).assign(
        cell=["c1"]), COMPARISON)
    assert both[0].ok
    # One repetition committed: no spread to derive a tolerance from; the re-run of that
    # repetition must repeat it, and a re-run of more repetitions cannot be judged.
    once = _table([1.0], [math.nan], n=1)
    assert compare_tables(once, _table([1.0], [math.nan], n=1), COMPARISON)[0].ok
    moved = compare_tables(once, _table([1.001], [math.nan], n=1), COMPARISON)[0]
    assert not moved.ok and "regenerate" in moved.reason
    assert not compare_tables(once, _table([1.0], [0.1], n=3), COMPARISON)[0].ok


def test_many_small_shifts_fail_the_chi_square_although_no_cell_crosses_the_bound():
    from dpggm.experiments.reproduction import _chi_square

    cells = 60
    se = np.full(cells, 0.1)
    committed = _table(np.ones(cells), se)
    sd = 0.1 * math.sqrt(10)
    shift = 2.5 * sd * math.sqrt(1 / 10 + 1 / 10)  # 2.5 standard errors of the difference
    rerun = _table(np.ones(cells) + shift * np.where(np.arange(cells) % 2, 1, -1), se)
    checks = compare_tables(committed, rerun, COMPARISON)
    assert all(c.ok for c in checks)
    value, df, limit = _chi_square(checks)
    assert df == cells and value == pytest.approx(cells * 2.5**2) and value > limit
    # Unchanged cells (the same streams) add nothing.
    value, _, limit = _chi_square(compare_tables(committed, committed, COMPARISON))
    assert value == 0 and limit > 0


def test_every_run_has_its_committed_files_and_the_command_line_lists_them(capsys):
    for name, run in RUNS.items():
        for comparison in run.comparisons:
            path = ROOT / name / comparison.file
            assert path.exists(), path
            frame = pd.read_csv(path)
            for metric in comparison.metrics:
                assert f"{metric}_mean" in frame and f"{metric}_{comparison.spread}" in frame
    assert main(["list"]) == 0
    assert "pace_ggm" in capsys.readouterr().out


@pytest.mark.reproduction
@pytest.mark.parametrize("name", list(RUNS))
def test_the_committed_run_agrees_with_a_reduced_rerun_from_head(name):
    result = check_run(name, root=ROOT)
    print(result.report())
    assert result.ok, result.report()


def test_a_zero_committed_spread_gives_way_to_the_reruns():
    # Ten committed repetitions that all counted 5 rounds; a re-run of ten counts 5.1 on
    # average with spread 0.32: within its Monte-Carlo error, not a stale file.
    committed = _table([5.0], [0.0])
    rerun = _table([5.1], [0.316 / math.sqrt(10)])
    assert compare_tables(committed, rerun, COMPARISON)[0].ok
    # Without a spread on either side, the cell must repeat to rounding.
    assert not compare_tables(committed, _table([5.1], [0.0]), COMPARISON)[0].ok


def test_a_run_that_is_its_own_reduced_rerun_must_repeat_every_cell():
    # Within four standard errors, but the same run from the same seeds: a stale file.
    committed = _table([1.0, 2.0], [0.1, 0.1])
    moved = _table([1.0, 2.0 + 0.01], [0.1, 0.1])
    assert all(c.ok for c in compare_tables(committed, moved, COMPARISON))
    checks = compare_tables(committed, moved, COMPARISON, repeat=True)
    assert [c.ok for c in checks] == [True, False]
    assert "regenerate" in checks[1].reason
    assert all(c.ok for c in compare_tables(committed, _table([1.0 + 1e-12, 2.0], [0.1, 0.1]),
                                            COMPARISON, repeat=True))


def test_pace_ggm_is_checked_cell_for_cell():
    # Its reduced re-run is the full run itself (seconds): any change of PACE-GGM's numbers
    # (its budget shares, say) must fail the check, not hide in the Monte-Carlo error.
    assert RUNS["pace_ggm"].repeats
    assert not any(run.repeats for name, run in RUNS.items() if name != "pace_ggm")


@pytest.mark.parametrize(
    ("interrupt", "state", "regenerated"),
    [
        (KeyboardInterrupt(), "its files are as they were", "pace_ggm"),
        # Ctrl-C while the files were moved in: it took effect after the last one.
        (KeyboardInterrupt("interrupted once every file was in place"),
         "its files were all written", "pace_ggm, pace_ggm_variants"),
    ],
)
def test_an_interrupted_regeneration_says_what_it_left_and_exits_130(
    tmp_path, monkeypatch, capsys, interrupt, state, regenerated
):
    from dpggm.experiments import reproduction

    ran = []

    def regenerate(name, *, root=None):
        if name == "pace_ggm_variants":
            raise interrupt
        ran.append(name)
        return tmp_path / name

    monkeypatch.setattr(reproduction, "regenerate", regenerate)
    status = reproduction.main(["run", "pace_ggm", "pace_ggm_variants", "pace_registry_data",
                                "--root", str(tmp_path)])
    assert status == 130 and ran == ["pace_ggm"]
    err = capsys.readouterr().err
    assert "pace_ggm_variants: interrupted after" in err
    assert f"{state} (regenerated: {regenerated})" in err

def test_a_run_whose_committed_files_are_missing_fails_without_rerunning(tmp_path, capsys):
    from dataclasses import replace

    from dpggm.experiments import reproduction

    def reduced():
        raise AssertionError("re-ran although nothing was committed to compare with")

    run = replace(RUNS["pace_ggm_variants"], reduced=reduced)
    result = check_run(run, root=tmp_path)
    assert not result.ok and result.seconds == 0
    report = result.report()
    assert report.splitlines()[0].endswith(
        "0 cell metrics checked (every variant and ρ, 3 trials; 0 s): 0 repeated to rounding, "
        "0 beyond the tolerance; 1 committed file missing")
    assert "pace_ggm_variants.csv: the committed file" in report and "is missing" in report
    assert not re.search(r"\bnan\b", report.replace(str(tmp_path), ""))
    with pytest.raises(SystemExit):
        reproduction.main(["check", "pace_ggm", "--root", str(tmp_path / "nowhere")])
    assert "--root must be a directory" in capsys.readouterr().err
