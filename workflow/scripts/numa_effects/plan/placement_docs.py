"""docs/placements.md's generated tables: every fixed placement's ``numactl`` arguments and
the node-pair family's pairs on a topology, and ``numa-effects placement``, which prints them."""

from __future__ import annotations

from numa_effects.plan import topology
from numa_effects.plan.node_pairs import node_pair_members
from numa_effects.plan.placement import PLACEMENTS, NotApplicable, Plan, baseline_of, label, plan
from numa_effects.plan.topology import Topology


def numactl_cell(p: Plan | NotApplicable, skipped: str) -> str:
    """A table cell: the plan's ``numactl`` arguments, or ``skipped``: why not."""
    if isinstance(p, Plan):
        return f"`numactl {' '.join(p.numactl_args())}`"
    return f"{skipped}: {p.reason}"


def examples_markdown(topo: Topology, threads: list[int], use_smt: bool = False) -> str:
    """docs/placements.md's table of every fixed placement's numactl arguments."""
    lines = ["| placement | t | numactl arguments |", "| --- | --- | --- |"]
    for name in (n for n, entry in PLACEMENTS.items() if not entry.fields):
        for t in threads:
            what = numactl_cell(plan(topo, t, name, use_smt), "not applicable")
            lines.append(f"| `{label(name, use_smt)}` | {t} | {what} |")
    return "\n".join(lines)


def node_pairs_markdown(topo: Topology, threads: list[int], value, use_smt: bool) -> str:
    """A Markdown table of each node pair ``node_pairs: value`` selects on ``topo``: its
    baseline and numactl arguments (or why it is skipped) at each thread count."""
    lines = ["| pair | baseline | t | numactl arguments |", "| --- | --- | --- | --- |"]
    for name in (label(n, use_smt) for n in node_pair_members(value, topo)):
        base = baseline_of(name)
        base = f"`{base}`" if base else "— (the baseline)"
        for t in threads:
            what = numactl_cell(plan(topo, t, name, use_smt), "skipped")
            lines.append(f"| `{name}` | {base} | {t} | {what} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(
        prog="numa-effects placement",
        description="Print the numactl arguments of every placement on a topology.",
    )
    ap.add_argument("--topology", help="topology file or sysfs copy (default: this machine)")
    ap.add_argument("--threads", default="1,4", help="comma-separated thread counts")
    ap.add_argument("--smt", action="store_true", help="use_smt: true")
    ap.add_argument(
        "--node-pairs",
        metavar="all|diagonal+row0",
        help="print the node-pair family's pairs (config key node_pairs) instead",
    )
    args = ap.parse_args(argv)
    try:  # a topology it cannot read, a count or a pair spelled wrong: one line, status 2
        topo = topology.load(args.topology) if args.topology else topology.current()
        threads = [int(t) for t in args.threads.split(",")]
        if args.node_pairs:
            print(node_pairs_markdown(topo, threads, args.node_pairs, args.smt))
        else:
            print(examples_markdown(topo, threads, args.smt))
    except ValueError as exc:
        ap.error(str(exc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
