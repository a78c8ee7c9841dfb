"""Parse Su, Guo & Zhang's Tables 1-2 from the paper's text into paper_private_precision_tables.csv.

Usage: python3 docs/reproduction/parse_private_precision.py [PAPER.txt]  (default: the copy in
/work/shared/seeds/000_*.txt).
"""

from __future__ import annotations

import glob
import re
import sys
from pathlib import Path

import pandas as pd

TABLES = (
    ("1", (1, 2, 3), r"^Model1 Model2 Model3", "Table 1 Simulation"),
    ("2", (2, 3, 4), r"^Model2 Model3 Model4", "Table 2 Simulation"),
)


def block(text: list[str], start: str, end: str) -> list[str]:
    first = next(i for i, line in enumerate(text) if re.match(start, line.strip()))
    last = next(i for i, line in enumerate(text) if i > first and line.startswith(end))
    return [line.strip() for line in text[first:last] if line.strip()]


def parse(text: list[str]) -> pd.DataFrame:
    rows = []
    for table, models, start, end in TABLES:
        lines = block(text, start, end)
        n = epsilon = None
        i = 0
        while i < len(lines):
            line = lines[i]
            if re.fullmatch(r"\d{3}", line):
                n = int(line)
            elif re.fullmatch(r"[0-9.]+", line):
                epsilon = float(line)
            elif len(line.split()) == 9 and not line.startswith("("):
                # A row of means, then the row of standard errors in parentheses.
                means = [float(x) for x in line.split()]
                errors = [float(x.strip("()")) for x in lines[i + 1].split()]
                cells = [(m, norm) for m in models for norm in ("l1", "fro", "spectral")]
                for (model, norm), mean, se in zip(cells, means, errors):
                    rows.append({"table": table, "model": model, "n": n, "epsilon": epsilon,
                                 "norm": norm, "mean": mean, "se": se})
                i += 1
            i += 1
    return pd.DataFrame(rows)


def main() -> int:
    paper = sys.argv[1] if len(sys.argv) > 1 else glob.glob("/work/shared/seeds/000_*.txt")[0]
    text = Path(paper).read_text(encoding="utf-8").splitlines()
    parse(text).to_csv(Path(__file__).with_name("paper_private_precision_tables.csv"), index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
