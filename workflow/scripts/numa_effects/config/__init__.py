"""The config checked before any job starts: one function, one verdict, one line per problem.
``check`` is the one checker: ``workflow/rules/common.smk`` calls it (``check_or_exit``) while
Snakemake parses the workflow, so ``snakemake -n`` fails as a real run does; ``python -m
numa_effects.config`` (``cli``) reads the files as Snakemake does and prints the same lines."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from numa_effects.compare import check as compare_checks
from numa_effects.config import checks, files, paths, schema
from numa_effects.config.problem import ConfigError, Problem
from numa_effects.plan import grid
from numa_effects.plan.topology import Topology

__all__ = ["Checked", "ConfigError", "Problem", "check", "check_or_exit"]


@dataclass(frozen=True)
class Checked:
    """A config that can run (normalised in place) and the topology its cells are planned on."""

    config: dict
    topology: Topology


def check(
    config: dict,
    configfiles: Iterable[str | Path] = (),
    workdir: str | Path | None = None,
    workflow_dir: str | Path | None = None,
) -> Checked:
    """Check ``config`` (normalised in place) or raise ``ConfigError`` with every problem.
    ``configfiles`` (``workflow.configfiles``) are re-read for keys given twice; relative paths
    are read from ``workdir`` (default: the current directory, as in Snakemake)."""
    sch = schema.load()
    problems = files.duplicate_problems(configfiles, workdir)
    if not isinstance(config, dict):
        what = f"the config is {schema.type_of(config)}; allowed: a mapping of keys"
        raise ConfigError([*problems, Problem("", what)])
    schema.normalize(config, sch)
    if config.get("compare"):  # a comparison reads result folders: no grid is needed
        sch = {**sch, "required": []}
    found = checks.nonfinite_problems(config)  # inf is out of range too: said once, so
    nonfinite = {p.key for p in found}
    found += [p for p in schema.problems(config, sch) if p.key not in nonfinite]
    found += checks.iteration_problems(config)
    failed = {p.top for p in found if p.key}  # the checks below read only keys that passed these
    problems += found
    if "results" not in failed:
        problems += paths.results_problems(
            config["results"], workdir, workflow_dir, nested=not config.get("compare")
        )
    if "import" not in failed:
        problems += paths.import_problems(config)
    if "compare" not in failed:
        problems += compare_checks.compare_problems(config, workdir, "results" not in failed)
    topo, found = (None, []) if "topology" in failed else paths.load_topology(config)
    problems += found
    if topo is not None and not failed & {"threads", "use_smt"}:
        problems += checks.thread_problems(config, topo)
    if topo is not None:
        problems += checks.family_problems(config, topo, failed)
    grid_keys = {"exclude", "use_smt", "node_pairs", *(a.config_key for a in grid.AXES)}
    if topo is not None and not failed & grid_keys:
        problems += checks.exclude_problems(config, topo)
    if topo is not None and not failed & {"packing", "optimizations", "placements", "use_smt"}:
        problems += checks.packing_problems(config, topo)
    if not failed & {"deploy", "optimizations", "allocators"}:
        problems += checks.deploy_problems(config)
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
