"""The config checked before any job starts: one function, one verdict, one line per problem.
``check`` is the one checker: ``workflow/rules/common.smk`` calls it (``check_or_exit``) while
Snakemake parses the workflow, so ``snakemake -n`` fails as a real run does; ``numa-effects
check-config`` (``cli``) reads the files as Snakemake does and prints the same lines."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from numa_effects.compare import check as compare_checks
from numa_effects.config import files, paths, schema
from numa_effects.config.problem import ConfigError, Problem, shown
from numa_effects.plan import grid
from numa_effects.plan import packing as packing_mod
from numa_effects.plan import placement as placement_mod
from numa_effects.plan.topology import Topology

__all__ = ["Checked", "ConfigError", "Problem", "check", "check_or_exit"]


@dataclass(frozen=True)
class Checked:
    """A config that can run (normalised in place) and the topology its cells are planned on."""

    config: dict
    topology: Topology


def check(config: dict, configfiles: Iterable = (), workdir=None, workflow_dir=None) -> Checked:
    """Check ``config`` (normalised in place) or raise ``ConfigError`` with every problem.
    ``configfiles`` (``workflow.configfiles``) are re-read for keys given twice; relative paths
    are read from ``workdir`` (default: the current directory, as in Snakemake)."""
    sch, problems = schema.load(), files.duplicate_problems(configfiles, workdir)
    if not isinstance(config, dict):
        what = f"the config is {schema.type_of(config)}; allowed: a mapping of keys"
        raise ConfigError([*problems, Problem("", what)])
    schema.normalize(config, sch)
    compare = config.get("compare")  # a comparison reads result folders: no grid is needed
    found = schema.problems(config, {**sch, "required": []} if compare else sch)
    found += iteration_problems(config)
    failed = {p.top for p in found if p.key}  # the checks below read only keys that passed these
    problems += found
    if "results" not in failed:
        problems += paths.results_problems(config["results"], workdir, workflow_dir, not compare)
    problems += [] if "import" in failed else paths.import_problems(config)
    if "compare" not in failed:
        problems += compare_checks.compare_problems(config, workdir, "results" not in failed)
    topo, found = (None, []) if "topology" in failed else paths.load_topology(config)
    problems += found + (family_problems(config, topo, failed) if topo else [])
    grid_keys = {"exclude", "use_smt", "node_pairs", *(a.config_key for a in grid.AXES)}
    for reads, on_topology in (
        ({"threads", "use_smt"}, thread_problems),
        (grid_keys, exclude_problems),
        ({"packing", "optimizations", "placements", "use_smt"}, packing_problems),
    ):
        problems += on_topology(config, topo) if topo and not failed & reads else []
    if not failed & {"deploy", "optimizations", "allocators"}:
        problems += deploy_problems(config)
    if problems:
        raise ConfigError(problems)
    return Checked(config, topo)


def check_or_exit(config: dict, **kwargs) -> Checked:
    """``check``, but a problem ends the process with status 1 and its lines on stderr. Snakemake
    prints a traceback for any exception raised while it reads the workflow; SystemExit is not
    an Exception to it."""
    try:
        return check(config, **kwargs)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
    except Exception as exc:
        where = "`numa-effects check-config --traceback FILE...`"
        why = f"the check itself failed ({type(exc).__name__}: {exc}); {where} shows where"
        print(f"invalid configuration: {why}", file=sys.stderr)
    raise SystemExit(1)


# What the schema cannot check: bounds between keys, and keys against the
# planning topology; the file system is ``paths``'s.
def exclude_problems(config: dict, topo: Topology) -> list[Problem]:
    """``exclude`` must leave at least one cell of the grid on the planning machine."""
    if not config.get("exclude"):
        return []
    cells = itertools.product(*(a.values(config, topo) for a in grid.AXES))
    left_out = grid.excluded(config, topo)
    if not all(left_out(grid.CellKey(*values)) for values in cells):
        return []
    what = f"leaves no cell of the grid on {_machine(config)}; allowed: entries that match only "
    return [Problem("exclude", what + "some cells (each names values of the grid's keys)")]


def iteration_problems(config: dict) -> list[Problem]:
    lo, hi = config.get("min_iterations"), config.get("max_iterations")
    if not (isinstance(lo, int) and isinstance(hi, int) and lo > hi):
        return []
    what = f"{lo} is more than max_iterations ({hi}); allowed: min_iterations <= max_iterations"
    return [Problem("min_iterations", what)]


def _machine(config: dict) -> str:
    return f"topology file {config['topology']}" if config.get("topology") else "this machine"


def thread_problems(config: dict, topo: Topology) -> list[Problem]:
    threads = config.get("threads")
    if not isinstance(threads, list):  # auto
        return []
    use_smt = bool(config.get("use_smt"))
    # the most threads a fixed placement can run (a family's members use cores those can use)
    fixed = [name for name, entry in placement_mod.PLACEMENTS.items() if not entry.fields]
    counts = range(len(topo.usable_cpus(use_smt)), 0, -1)  # the first that runs, the largest
    plans = ((t, placement_mod.plan(topo, t, name, use_smt)) for t in counts for name in fixed)
    limit = next((t for t, plan in plans if isinstance(plan, placement_mod.Plan)), 0)
    too_many = sorted(t for t in threads if t > limit)
    if not too_many:
        return []
    unit, nodes = placement_mod.unit(use_smt), len(topo.nodes)
    what = f"{', '.join(map(str, too_many))} {'is' if len(too_many) == 1 else 'are'} more than "
    what += f"{_machine(config)} can ever run ({limit} {unit} usable in total on {nodes} NUMA "
    what += f"node{'s' * (nodes > 1)}, use_smt: {shown(use_smt)}); allowed: 1..{limit}, or auto. "
    what += "(Counts above one node's cores but within the total are fine: placements that "
    return [Problem("threads", what + "cannot run them are skipped and listed in skipped.csv.)")]


def family_problems(config: dict, topo: Topology, failed: set[str] = frozenset()) -> list[Problem]:
    """The key of each placement family that selects its members (``node_pairs``) against the
    topology, unless the schema already refused it."""
    return [
        Problem(key + suffix, text)
        for entry in placement_mod.families().values()
        if (key := entry.members.config_key) not in failed
        for suffix, text in entry.members.problems(config.get(key), topo, _machine(config))
    ]


# packing's counts that need more cores than the planning machine has (threads: two instances)
PACKING_COUNTS = {
    "budgets": "{v} is more than the {n} cores of {m}; allowed: node, all or a core count "
    "between 1 and {n}",
    "interference.threads": "{v}: two instances of {v} threads need {w} cores, and {m} has {n}; "
    "allowed: auto or counts up to {h}",
    "interference.instances": "{v} instances need at least {v} cores, and {m} has {n}; allowed: "
    "auto or sizes between 2 and {n}",
}


def packing_problems(config: dict, topo: Topology) -> list[Problem]:
    """The ``packing`` key against the grid and the planning topology (docs/packing.md)."""
    given, problems = config.get("packing") or {}, []
    placements, base = config.get("placements", ()), packing_mod.BASELINE_PLACEMENT
    if given.get("enabled") is True and base not in placements:
        what = f"true, but packing predicts from the '{base}' cells and placements "
        what += f"({', '.join(placements)}) has none; allowed: auto or false, or add {base} to "
        problems.append(Problem("packing.enabled", what + "placements"))
    n, ig = len(topo.usable_cpus(bool(config.get("use_smt")))), given.get("interference") or {}
    for key, text in PACKING_COUNTS.items():
        values, per = (
            ig.get(key.split(".")[-1]) if "." in key else given.get(key),
            1 + ("th" in key),
        )
        for i, v in enumerate(values if isinstance(values, list) else ()):
            if isinstance(v, int) and per * v > n:
                what = text.format(v=v, w=2 * v, n=n, h=n // 2, m=_machine(config))
                problems.append(Problem(f"packing.{key}[{i}]", what))
    return problems + _not_in_grid(config, "packing", given, "optimizations")


def _not_in_grid(config: dict, key: str, given: dict, grid_key: str) -> list[Problem]:
    """Each name of ``key``'s list ``grid_key`` that the grid's list of that name lacks."""
    allowed = list(config.get(grid_key) or ())
    what = f"is not in {grid_key}; allowed: {', '.join(allowed)}"
    return [
        Problem(f"{key}.{grid_key}[{i}]", f"{shown(v)} {what}")
        for i, v in enumerate(given.get(grid_key) or ())
        if v not in allowed
    ]


def deploy_problems(config: dict) -> list[Problem]:
    """The ``deploy`` key against the grid: what it searches must be measured."""
    given = config.get("deploy") or {}
    problems = _not_in_grid(config, "deploy", given, "optimizations")
    problems += _not_in_grid(config, "deploy", given, "allocators")
    rounds, most = given.get("rounds"), given.get("max_rounds")
    if isinstance(rounds, int) and isinstance(most, int) and most < rounds:
        problems += [Problem("deploy.max_rounds", f"{most} is fewer than deploy.rounds ({rounds})")]
    return problems
