"""docs/reproduction.md: its commands are valid, it has a section per paper, its tables
and every number in its text are what build_tables.py makes of the CSV files beside it
(from the template reproduction.md.in), and its labels say what was compared.

That the CSV files are what the code produces now is checked by
tests/test_reproduction_check.py (a reduced re-run, ``pytest -m reproduction``)."""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
from pathlib import Path

import pytest
import typer

from dpggm.cli.experiment import ALIASES, EXPERIMENTS
from dpggm.cli.main import app
from dpggm.experiments.reproduction import RUNS

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "reproduction.md"
TEMPLATE = ROOT / "docs" / "reproduction" / "reproduction.md.in"


def _text() -> str:
    return PAGE.read_text(encoding="utf-8")


def _commands() -> list[str]:
    """Every ``dpggm experiment`` command the page shows (inline code or code blocks)."""
    found = re.findall(r"(?:python3? -m dpggm|dpggm) (experiment [^`\n|]*)", _text())
    return [command.strip() for command in found]


def test_every_paper_has_its_section_in_order():
    headings = re.findall(r"^## `(\w+)` — (.+)$", _text(), re.M)
    assert [name for name, _ in headings] == list(EXPERIMENTS)
    assert all(title.strip() for _, title in headings)


def test_every_run_is_on_the_page_with_its_regeneration_command():
    named = set(re.findall(r"python3 -m dpggm\.experiments\.reproduction run ([\w.]+)`", _text()))
    assert named == set(RUNS)
    # Every run directory beside the page is a run of the registry (no orphaned results).
    directories = {p.name for p in (ROOT / "docs" / "reproduction").iterdir() if p.is_dir()}
    assert directories == set(RUNS)


def test_the_dpggm_experiment_commands_on_the_page_are_valid_cli_invocations():
    commands = _commands()
    assert commands
    group = typer.main.get_command(app)
    for command in commands:
        arguments = shlex.split(command)
        # Parsing, without running: unknown options, bad types and a missing name fail.
        with group.make_context("dpggm", list(arguments), resilient_parsing=False) as parent:
            name, sub, rest = group.resolve_command(parent, arguments)
            assert name == "experiment"
            with sub.make_context(name, rest, parent=parent) as context:
                assert context.params["name"] in {**EXPERIMENTS, **ALIASES}, command


def test_an_invalid_command_would_be_caught():
    group = typer.main.get_command(app)
    arguments = ["experiment", "private_precision", "--fulll"]
    with group.make_context("dpggm", list(arguments)) as parent:
        name, sub, rest = group.resolve_command(parent, arguments)
        # Typer's own copy of click raises its usage error; its message is the contract.
        with pytest.raises(Exception, match="No such option: --fulll"):
            sub.make_context(name, rest, parent=parent)


def _build(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs" / "reproduction", docs / "reproduction")
    spec = importlib.util.spec_from_file_location(
        "build_tables", docs / "reproduction" / "build_tables.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return docs, module


def test_the_page_is_built_from_the_template_and_the_csv_files_beside_it(tmp_path):
    # Rebuild the page in a copy of docs/ and compare: a table or a number edited by hand,
    # or a CSV replaced without rebuilding, shows up as a difference.
    docs, module = _build(tmp_path)
    assert module.main() == 0
    assert (docs / "reproduction.md").read_text(encoding="utf-8") == _text()
    assert "*(not run)*" not in _text()
    assert "{{" not in _text()


def test_a_changed_csv_changes_the_page(tmp_path):
    docs, module = _build(tmp_path)
    measured = docs / "reproduction" / "pace_ggm" / "pace_ggm_measured.csv"
    text = measured.read_text(encoding="utf-8").replace("breast_cancer,31,1.0,",
                                                        "breast_cancer,31,1.0,99")
    measured.write_text(text, encoding="utf-8")
    assert module.main() == 0
    assert (docs / "reproduction.md").read_text(encoding="utf-8") != _text()


def test_an_unknown_value_in_the_template_is_an_error(tmp_path):
    docs, module = _build(tmp_path)
    template = docs / "reproduction" / "reproduction.md.in"
    template.write_text(template.read_text(encoding="utf-8") + "\n{{no.such.value}}\n",
                        encoding="utf-8")
    assert module.main() == 1


def test_no_figure_in_the_text_is_typed_by_hand():
    # Outside code (settings, formulas and commands are written as code) the template has
    # no decimal number, percentage, fraction or power of ten: every figure is a {{value}}
    # computed from the CSV files, or a table.
    text = TEMPLATE.read_text(encoding="utf-8")
    for pattern in (r"<!--.*?-->", r"```.*?```", r"`[^`\n]*`", r"{{[^}]*}}", r"!\[[^\]]*\]\([^)]*\)"):
        text = re.sub(pattern, "", text, flags=re.S)
    typed = re.findall(r"\d+\.\d+|\d+\s?%|\d+/\d+|\d+e-?\d+", text)
    assert typed == []


def _summary_rows() -> list[dict]:
    block = _text().split("<!-- BEGIN table:summary -->")[1].split("<!-- END table:summary -->")[0]
    lines = block.strip().splitlines()
    header = [c.strip() for c in lines[0].split("|")[1:-1]]
    return [dict(zip(header, (c.strip() for c in line.split("|")[1:-1]))) for line in lines[2:]]


def test_the_summary_says_what_was_compared_and_where_it_agrees():
    rows = _summary_rows()
    assert "like for like" not in _text().lower()
    papers = [row["paper"] for row in rows]
    assert set(papers) == {"Su, Guo & Zhang", "Wang, Huai & Xu", "Guo et al.", "Ferrando et al."}
    for row in rows:
        assert re.fullmatch(r"\d+/\d+ \(\d+ %\)|–", row["within 2 SE of the difference"]), row
        assert row["where (2 SE; stated tolerance in brackets)"], row
    # Su, Guo & Zhang's Table 2 in the paper's setting does not run the paper's algorithm,
    # and says so.
    agl = [r for r in rows if r["paper"] == "Su, Guo & Zhang" and r["table"].startswith("Table 2")]
    assert len(agl) == 2 and "not its algorithm" in agl[1]["compared"]
    # Guo et al.'s Table 1(b): second row was chosen after seeing the variants, and says so.
    post_hoc = [r for r in rows if r["table"] == "Table 1(b), AUC"][1]
    assert "after seeing the variants" in post_hoc["compared"]
    # Su, Guo & Zhang's Table 1: agreement is split by column and regime.
    where = [r for r in rows if r["table"].startswith("Table 1 (DP-RP)")][1]
    where = where["where (2 SE; stated tolerance in brackets)"]
    assert "ε ≥ 1.2" in where and "ε ≤ 0.8" in where and "ℓ2" in where


def _template_prose() -> str:
    """The template without comments, code blocks, images and ``{{values}}`` (inline code
    kept: a tolerance or a count typed there is typed all the same)."""
    text = TEMPLATE.read_text(encoding="utf-8")
    for pattern in (r"<!--.*?-->", r"```.*?```", r"!\[[^\]]*\]\([^)]*\)"):
        text = re.sub(pattern, "", text, flags=re.S)
    return " ".join(re.sub(r"{{[^}]*}}", "VALUE", text).split())


def test_no_tolerance_count_or_agreement_level_is_typed_by_hand():
    # The tolerances, the number of standard errors that counts as agreement, and every
    # count of cells come from build_tables.py (its constants, or the CSV files).
    prose = _template_prose()
    number = r"(?:\d+|two|three|four|five|six|seven|eight|nine|ten|twelve)"
    assert re.findall(r"±\s?\d+\s?%", prose) == []
    assert re.findall(rf"\b{number} (?:SE|standard errors)\b", prose, re.I) == []
    assert re.findall(rf"\b{number} of (?:the )?{number}\b", prose, re.I) == []
    assert re.findall(rf"\b{number} (?:(?!VALUE)[\w/ℓ-]+ ){{0,2}}cells\b", prose, re.I) == []
    assert re.findall(rf"\b{number} times the paper", prose, re.I) == []


def test_every_value_is_used_and_every_placeholder_filled(tmp_path):
    _docs, module = _build(tmp_path)
    used = set(module.PLACEHOLDER.findall(TEMPLATE.read_text(encoding="utf-8")))
    assert used == set(module.values())


def _page() -> str:
    return " ".join(_text().split())


def test_the_constants_named_in_the_prose_are_the_codes(tmp_path):
    from dpggm.experiments import reproduction

    _docs, module = _build(tmp_path)
    page = _page()
    assert f"|r − m| ≤ {reproduction.Z_TOLERANCE:g}·s·√(1/k + 1/N)" in page
    assert f"**A cell agrees within {module.Z_AGREEMENT:g} SE**" in page
    tolerance = module.RELATIVE_TOLERANCE
    assert (f"(`±{100 * tolerance['private_precision']:g} %` for Su, Guo & Zhang, "
            f"`±{100 * tolerance['covariance_perturbation']:g} %` for Wang, Huai & Xu") in page
    assert f"`±{100 * tolerance['pace_ggm']:g} %` for Ferrando et al." in page


def _csv(run: str, name: str):
    import pandas as pd

    return pd.read_csv(ROOT / "docs" / "reproduction" / run / name)


def test_the_concentrated_agreement_of_su_guo_zhang_table_1_is_what_the_csv_files_give():
    # Recomputed here from the CSV files, not through build_tables.py.
    ours = _csv("private_precision_paper", "private_precision_paper_setting.csv")
    ours = ours[(ours["setting"] == "paper") & (ours["method"] == "DP-RP")]
    paper = _csv("", "paper_private_precision_tables.csv")
    paper = paper[paper["table"].astype(str) == "1"]
    both = paper.merge(ours, on=["model", "n", "epsilon"])
    mine = [float(r[f"rel_{r['norm']}_mean"]) for _, r in both.iterrows()]
    both = both.assign(ratio=[m / float(p) for m, p in zip(mine, both["mean"])])
    near = (both["ratio"] - 1).abs() <= 0.25
    l1_fro = both["norm"].isin(["l1", "fro"])
    high, low = l1_fro & (both["epsilon"] >= 1.2), l1_fro & (both["epsilon"] < 1)
    expected = (f"within ±25 % are {int(near[high].sum())} of the {int(high.sum())} "
                f"ℓ1/Frobenius cells at `ε ≥ 1.2`, {int(near[low].sum())} of the "
                f"{int(low.sum())} at `ε ≤ 0.8`")
    assert expected in _page()
    spectral = both["norm"] == "spectral"
    assert f"{int(near[spectral].sum())} of the {int(spectral.sum())} spectral-norm cells" in _page()


def test_the_summary_rows_name_the_repetitions_their_runs_made():
    rows = {(r["paper"], r["table"], r["compared"].split(";")[0]): r["compared"]
            for r in _summary_rows()}

    def reps(frame) -> str:
        return "/".join(str(v) for v in sorted(set(int(v) for v in frame["n_reps"])))

    honest = _csv("private_precision", "private_precision_errors.csv")
    setting = _csv("private_precision_paper", "private_precision_paper_setting.csv")
    variants = _csv("noisy_data_1b_variants", "noisy_data_1b_variants.csv")
    pace = _csv("pace_ggm_variants", "pace_ggm_variants.csv")
    expected = {
        "Table 1 (DP-RP), models 1-3": [reps(honest[honest["method"] == "DP-RP"]),
                                        reps(setting[(setting["setting"] == "paper")
                                                     & (setting["method"] == "DP-RP")])],
        "Table 1(b), AUC": [reps(_csv("noisy_data_1b", "noisy_data_table_1b.csv")),
                            reps(variants[variants["variant"].str.startswith("like for like")])],
        "Table 4, breast cancer, off-diagonal entries measured": [
            reps(_csv("pace_ggm", "pace_ggm_measured.csv").query("dataset == 'breast_cancer'")),
            reps(pace[pace["variant"] == "all of the paper's choices at once"])],
    }
    for table, counts in expected.items():
        compared = [text for (_, t, _), text in rows.items() if t == table]
        assert [re.search(r"; (\d+(?:/\d+)?) (?:repetitions?|trials?)$", c).group(1)
                for c in compared] == counts, table
