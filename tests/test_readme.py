"""The README runs as written: every ```bash and ```python block, in order, in one empty
directory, with printed numbers matching the comments.

Rules (the only departures from running the README verbatim):

* lines that install the package (``python3 -m pip install ...``) are skipped: the test
  runs the working tree, with ``PYTHONPATH`` pointing at ``src/`` -- which is why the
  README calls the command line as ``python3 -m dpggm`` (the installed ``dpggm`` script is
  the same program);
* ``python3 -m pytest`` lines are skipped (the test suite would run itself);
* in a python block, a comment line right after a ``print(...)`` line is the expected
  output of that print and must match the printed line exactly.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SKIPPED = (re.compile(r"^python3 -m pip install\b"), re.compile(r"^python3 -m pytest\b"))


def _blocks() -> list[tuple[str, str]]:
    text = README.read_text(encoding="utf-8")
    return [(m[1], m[2]) for m in re.finditer(r"```(bash|python)\n(.*?)```", text, re.S)]


def _bash_commands(body: str) -> list[str]:
    commands, current = [], ""
    for line in body.splitlines():
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        current += line
        if current.strip():
            commands.append(current.strip())
        current = ""
    result = []
    for command in commands:
        # "a && b" runs as two commands, so that a skipped install does not skip b.
        for part in command.split("&&"):
            part = part.strip()
            if part and not any(rule.search(part) for rule in SKIPPED):
                result.append(part)
    return result


def _expected_prints(body: str) -> list[str]:
    lines = body.splitlines()
    expected = []
    for before, line in zip(lines, lines[1:]):
        if before.lstrip().startswith("print(") and line.lstrip().startswith("# "):
            expected.append(line.lstrip()[2:])
    return expected


def test_readme_blocks_exist_and_name_no_missing_files():
    kinds = [kind for kind, _ in _blocks()]
    assert "bash" in kinds and "python" in kinds
    text = README.read_text(encoding="utf-8")
    # Every repository file the README names exists (SPEC.md is not in the repository).
    for name in re.findall(r"\b((?:benchmarks|tests|src)/[\w./-]+\.py|[A-Z]+\.md)\b", text):
        assert (ROOT / name).exists(), name


def test_readme_runs_as_written(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "100"}
    for kind, body in _blocks():
        if kind == "bash":
            for command in _bash_commands(body):
                done = subprocess.run(command, shell=True, cwd=tmp_path, env=env,
                                      capture_output=True, text=True, timeout=900)
                assert done.returncode == 0, (command, done.stdout, done.stderr)
                assert "Traceback" not in done.stdout + done.stderr, command
        else:
            done = subprocess.run([sys.executable, "-c", body], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, (body, done.stderr)
            printed = [line.strip() for line in done.stdout.splitlines()]
            for expected in _expected_prints(body):
                assert expected in printed, (expected, printed)
