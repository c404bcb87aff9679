#!/usr/bin/env python3
"""The manual's two generated pictures (`make docs-img`), each with the text it is drawn from
beside it, so that tests/test_docs_img.py can regenerate the text and say when a picture is
stale (pixels are never compared: they differ between matplotlib and Graphviz builds):

- docs/img/placements.svg (+ placements.txt): `sequential`, `interleave`, `remote` and a
  2x(t1) packing on two sockets of four cores, drawn from the placement planner's own plans
  (plan.placement on tests/fixtures/topology/synthetic-2x4.lscpu-p.txt);
- docs/img/rulegraph.svg (+ rulegraph.dot): the workflow's rules, `snakemake --rulegraph` of the
  default config without a budget (every rule) on that topology, rendered by Graphviz's `dot`
  (tools/install-system-deps --docs).

Usage: tools/docs_img.py [placements|rulegraph]...  (default: both)
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from numa_effects.plan import placement, topology  # noqa: E402

IMG = REPO / "docs" / "img"
SNAKEFILE = REPO / "Snakefile"
TOPOLOGY = REPO / "tests" / "fixtures" / "topology" / "synthetic-2x4.lscpu-p.txt"
# (title, the plans: one per instance)
PANELS = {
    "sequential, 4 threads": lambda topo: [placement.plan(topo, 4, "sequential")],
    "interleave, 4 threads": lambda topo: [placement.plan(topo, 4, "interleave")],
    "remote, 2 threads": lambda topo: [placement.plan(topo, 2, "remote")],
    "2x(t1): two 1-thread instances": lambda topo: placement.pack(topo, [1, 1], budget=2),
}
COLOURS = ("#1f77b4", "#ff7f0e")  # one per instance


def plans() -> dict[str, list]:
    topo = topology.load(TOPOLOGY)
    return {title: make(topo) for title, make in PANELS.items()}


def placements_text() -> str:
    """What the drawing shows, line by line, and the digests of what draws it."""
    digest = {
        p: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in (TOPOLOGY, Path(__file__))
    }
    lines = [f"# docs/img/placements.svg is drawn from this ({Path(__file__).name}); make docs-img"]
    lines += [f"{p.relative_to(REPO)}: sha256 {d}" for p, d in digest.items()]
    for title, instances in plans().items():
        for i, p in enumerate(instances):
            lines.append(f"{title} [{i}]: numactl {' '.join(p.numactl_args())}")
    return "\n".join(lines) + "\n"


def draw_panel(ax, topo, title: str, instances) -> None:
    from matplotlib.patches import Rectangle

    lines = [f"numactl {' '.join(p.numactl_args())}" for p in instances]
    ax.set_title("\n".join([title, *lines]), fontsize=8)
    for x0, node in zip((0.0, 5.0), topo.nodes, strict=True):
        ax.add_patch(Rectangle((x0, 1.0), 4.6, 2.4, fill=False, lw=1.5))
        ax.text(x0 + 2.3, 3.1, f"socket {node} (NUMA node {node})", ha="center", fontsize=8)
        for k, cpu in enumerate(topo.node_cpus(node)):
            owner = [i for i, p in enumerate(instances) if cpu in p.cpus]
            face = COLOURS[owner[0]] if owner else "white"
            ax.add_patch(Rectangle((x0 + 0.2 + 1.1 * k, 1.5), 0.9, 0.9, fc=face, ec="black"))
            ax.text(x0 + 0.65 + 1.1 * k, 1.95, str(cpu), ha="center", va="center", fontsize=8)
        users = [i for i, p in enumerate(instances) if node in p.mem_nodes] or [None]
        for k, i in enumerate(users):  # the bar split between the instances bound to it
            face = "white" if i is None else COLOURS[i]
            w = 4.6 / len(users)
            ax.add_patch(Rectangle((x0 + k * w, 0.0), w, 0.7, fc=face, ec="black", alpha=0.5))
        ax.text(x0 + 2.3, 0.35, f"memory of node {node}", ha="center", va="center", fontsize=8)
    ax.set_xlim(-0.2, 9.8)
    ax.set_ylim(-0.2, 3.5)
    ax.axis("off")


def draw_placements() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "numa-effects"  # stable ids: a redraw changes no line
    plt.rcParams["svg.fonttype"] = "none"  # text stays text
    topo = topology.load(TOPOLOGY)
    fig, axes = plt.subplots(2, 2, figsize=(10, 5.2))
    for ax, (title, instances) in zip(axes.flat, plans().items(), strict=True):
        draw_panel(ax, topo, title, instances)
    note = "coloured: each instance's cores and the memory it is bound to"
    fig.text(0.5, 0.01, note, ha="center", fontsize=8)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(IMG / "placements.svg", metadata={"Date": None})
    (IMG / "placements.txt").write_text(placements_text())


def rulegraph_dot() -> str:
    """`snakemake --rulegraph` of the default config, no budget, in an empty working folder."""
    with tempfile.TemporaryDirectory() as work:
        cmd = [str(Path(sys.executable).parent / "snakemake"), "--snakefile", str(SNAKEFILE)]
        cmd += ["--directory", work, "--configfile", str(REPO / "config" / "config.yaml")]
        cmd += ["--rulegraph", "dot", "--config", f"topology={TOPOLOGY}", "budget=null", "--"]
        cmd += ["all"]
        dot = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=True).stdout
    # Snakemake lists the edges in set order, which varies between runs: sorted, the text is stable
    lines = dot.rstrip("\n").splitlines()
    edges = sorted((e for e in lines if "->" in e), key=lambda e: [int(n) for n in e.split("->")])
    rest = [line for line in lines if "->" not in line]
    return "\n".join([*rest[:-1], *edges, rest[-1]]) + "\n"


def draw_rulegraph() -> None:
    dot = rulegraph_dot()
    (IMG / "rulegraph.dot").write_text(dot)
    if not shutil.which("dot"):
        sys.exit("tools/docs_img.py: Graphviz's dot is missing: tools/install-system-deps --docs")
    svg = str(IMG / "rulegraph.svg")
    subprocess.run(["dot", "-Tsvg", "-o", svg], input=dot, text=True, check=True)


if __name__ == "__main__":
    wanted = sys.argv[1:] or ["placements", "rulegraph"]
    for name in wanted:
        {"placements": draw_placements, "rulegraph": draw_rulegraph}[name]()
        print(f"docs/img/{name}.svg written", file=sys.stderr)
