"""Parse seed 000's Tables 1-2 from the paper's text into paper_seed000_tables.csv.

Usage: python3 docs/reproduction/parse_seed000.py  (reads /work/shared/seeds/000_*.txt, or
the path given as the first argument).
"""
import glob
import re
import sys
from pathlib import Path
PAPER = sys.argv[1] if len(sys.argv) > 1 else glob.glob("/work/shared/seeds/000_*.txt")[0]
text = open(PAPER, encoding="utf-8").read().splitlines()
def block(start_pat, end_pat):
    s = next(i for i,l in enumerate(text) if re.match(start_pat, l.strip()))
    e = next(i for i,l in enumerate(text) if i > s and l.startswith(end_pat))
    return [l.strip() for l in text[s:e] if l.strip()]
out = []
for table, models, start, end in (("1", (1,2,3), r"^Model1 Model2 Model3", "Table 1 Simulation"),
                                  ("2", (2,3,4), r"^Model2 Model3 Model4", "Table 2 Simulation")):
    lines = block(start, end)
    n = eps = None
    i = 0
    while i < len(lines):
        l = lines[i]
        if re.fullmatch(r"\d{3}", l): n = int(l); i += 1; continue
        if re.fullmatch(r"[0-9.]+", l): eps = float(l); i += 1; continue
        nums = l.split()
        if len(nums) == 9 and not l.startswith("("):
            means = [float(x) for x in nums]
            ses = [float(x.strip("()")) for x in lines[i+1].split()]
            k = 0
            for m in models:
                for norm in ("l1", "fro", "spectral"):
                    out.append({"table": table, "model": m, "n": n, "epsilon": eps, "norm": norm, "mean": means[k], "se": ses[k]})
                    k += 1
            i += 2; continue
        i += 1
import pandas as pd
df = pd.DataFrame(out)
df.to_csv(Path(__file__).with_name("paper_seed000_tables.csv"), index=False)
