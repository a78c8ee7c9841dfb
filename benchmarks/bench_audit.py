"""The full empirical privacy audit: the table of docs/audit.md.

Runs ``dpggm.audit.audit`` on every mechanism (test doubles included) with each target's
full number of runs, and prints a Markdown table (mechanism, relation, claimed epsilon and
delta, Clopper–Pearson lower bound at 95%, runs per data set, verdict, what a correct
audit expects, the separating event), then the mechanisms whose verdict differs from the
expected one. ``--quick`` uses the reduced CI numbers. Per-mechanism wall-clock time is
printed as the ratio to the fastest mechanism of the same run (the audit itself has no
external baseline).

Usage::

    nice -n 10 python benchmarks/bench_audit.py            # full (tens of minutes)
    python benchmarks/bench_audit.py --quick                # a few minutes
    python benchmarks/bench_audit.py --only ssp laplace
    python benchmarks/bench_audit.py --mironov              # Mironov's float-support attack
"""

from __future__ import annotations

import argparse
import time

from dpggm.audit import TARGETS, audit
from dpggm.audit.mironov import float_support_attack


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--mironov", action="store_true",
                        help="only the float-support attack on PrivateCovariance")
    args = parser.parse_args()
    if args.mironov:
        for mechanism in ("laplace", "gaussian"):
            r = float_support_attack(mechanism)
            print(f"{mechanism}: {r['releases']} releases each; not reachable from S=0: "
                  f"{r['unreachable']}; epsilon >= {r['epsilon_lower_bound']:.2f} at 95% "
                  f"(claimed {r['claimed_epsilon']:g})")
        return
    names = args.only or list(TARGETS)
    rows, seconds = [], {}
    for name in names:
        start = time.perf_counter()
        rows.extend(audit(name, quick=args.quick, seed=args.seed))
        seconds[name] = time.perf_counter() - start
        print(f"# {name}: {seconds[name]:.1f} s", flush=True)
    fastest = min(seconds.values())
    print()
    print("| mechanism | relation | claimed ε | δ | ε lower bound (95%) | runs / data set "
          "| verdict | expected | separating event |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        name = r.mechanism + (" (test double)" if r.double else "")
        if r.verdict == "refused":
            print(f"| {name} | {r.relation} | – | – | – | – | refused | – | {r.note} |")
            continue
        event = r.event.replace("|", "\\|")
        print(f"| {name} | {r.relation} | {r.claimed['epsilon']:.3g} | {r.claimed['delta']:g} "
              f"| {r.epsilon_lower_bound:.2f} | {r.samples} | **{r.verdict}** | {r.expected} "
              f"| {r.pair}: {event} |")
    print()
    print("time relative to the fastest mechanism:",
          ", ".join(f"{k} {v / fastest:.1f}x" for k, v in seconds.items()))
    unexpected = [r for r in rows if r.verdict not in ("refused", r.expected)]
    print("unexpected verdicts:", ", ".join(f"{r.mechanism}/{r.relation} ({r.verdict}, "
                                            f"lower bound {r.epsilon_lower_bound:.2f})"
                                            for r in unexpected) or "none")


if __name__ == "__main__":
    main()
