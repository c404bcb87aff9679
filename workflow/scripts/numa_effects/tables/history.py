"""Nothing measured is ever lost: the records a run replaces are kept first, and a run never
measures into another machine's results folder.

Snakemake deletes a job's output before the job runs. So before the first job of a run that
measures, ``keep`` hard-links (else copies) every measured record (``plan.remeasure.RULES``) into
``<results>/history/<digest>/<its path>``, ``<digest>`` the measuring code's that made it
(``plan.code``); ``history/index.json`` says what is kept. A snapshot whose records are replaced
gets its own tables and machine.json, for ``compare`` as the "before" side. A folder whose
``machine.json`` describes another machine than both the planning topology and this one is
refused (``Refused``) before anything in it changes.
"""

from __future__ import annotations

import contextlib
import filecmp
import itertools
import json
import os
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from numa_effects.measure import progress
from numa_effects.plan import paths, remeasure, stages
from numa_effects.plan import topology as topology_mod

HISTORY = "history"
INDEX = "index.json"
UNKNOWN = "unknown"  # the snapshot of records that do not say which code measured them
START_KEYS = ("launcher_started_at", "started_at")


class Refused(Exception):
    """A run that must not start: one line saying why (nothing in the results folder changed)."""


def glob_of(pattern: str) -> str:
    """A ``plan.paths`` pattern as a glob: every ``{wildcard}`` a ``*``."""
    return re.sub(r"\{[^}]*\}", "*", pattern)


def records(results: str | os.PathLike):
    """(rule, path) of every measured record below ``results``, the history excluded: rule by
    rule, each's sorted."""
    for rule, pattern in remeasure.RULES.items():
        for path in sorted(Path(results).glob(glob_of(pattern))):
            if path.is_file() and not path.name.startswith("."):
                yield rule, path


def measured_files(results: str | os.PathLike) -> list[str]:
    """Every measured record below ``results`` (relative, sorted), the history excluded."""
    return sorted({os.path.relpath(p, results) for _, p in records(results)})


def spec_beside_log(results: str | os.PathLike, rel: str) -> Path:
    """The spec the job that wrote record ``rel`` ran with (``measure.job.spec_path``)."""
    return Path(results, "logs", rel.removesuffix(".json") + ".spec.json")


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def recorded_code(results: str | os.PathLike, rel: str, data: dict | None = None) -> str | None:
    """The measuring code's digest of record ``rel``: its own, else its spec's; None without."""
    data = _read_json(Path(results, rel)) if data is None else data
    code = data.get("code") or _read_json(spec_beside_log(results, rel)).get("code")
    return str(code) if code else None


def _times(data, starts: list, ends: list) -> None:
    for k, v in data.items() if isinstance(data, dict) else enumerate(data):
        if isinstance(v, str) and (k in START_KEYS or k == "finished_at"):
            with contextlib.suppress(ValueError):
                (ends if k == "finished_at" else starts).append(datetime.fromisoformat(v))
        elif isinstance(v, dict | list):
            _times(v, starts, ends)


def record_seconds(data: dict) -> float | None:
    """How long a record's measurement took: latest ``finished_at`` - earliest start, or None."""
    starts, ends = [], []
    _times(data, starts, ends)
    if not starts or not ends:
        return None
    with contextlib.suppress(TypeError):  # naive and aware times mixed: no duration
        seconds = (max(ends) - min(starts)).total_seconds()
        return seconds if seconds >= 0 else None
    return None


def jobs(plan, raw: list[dict]) -> list[remeasure.Job]:
    """The measuring jobs of a run (``raw``: rule, output and Snakemake's flags), with why each
    measures and what its previous record took."""
    out = []
    root = Path(plan.results)
    defaults = remeasure.defaults(plan)
    for j in raw:
        path = Path(j["output"])
        data = _read_json(path) if path.is_file() else None
        rel = os.path.relpath(path, root)
        why = remeasure.reason(
            exists=data is not None,
            forced=bool(j.get("forced")),
            incomplete=bool(j.get("incomplete")),
            params_changed=bool(j.get("params_changed")),
            recorded_code=recorded_code(root, rel, data) if data is not None else None,
            code=plan.code.get("measure"),
        )
        previous = record_seconds(data) if data else None
        default = defaults.get(j["rule"]) or remeasure.default_seconds(j["rule"], plan)
        out.append(remeasure.Job(j["rule"], str(path), why, previous, default))
    return out


# -- the machine a results folder was measured on --------------------------------------------
def _shape(topo: topology_mod.Topology) -> list:
    return sorted((c.cpu, c.node, c.siblings) for c in topo.cpus)


def same_machine(a: topology_mod.Topology, b: topology_mod.Topology) -> bool:
    """The same layout of CPUs, nodes and SMT siblings, and the same CPU model where both
    name one (an ``lscpu`` capture names none). The host name is not compared: a container
    gets a new one at every start."""
    models = a.cpu_model and b.cpu_model and a.cpu_model != b.cpu_model
    return _shape(a) == _shape(b) and not models


def describe(topo: topology_mod.Topology, host: str | None = None) -> str:
    s = topo.summary()
    text = f"{s['cpu_model'] or 'CPU model not recorded'}, {s['logical_cpus']} CPU(s)"
    text += f" on {s['nodes']} node(s)"
    return text + (f", host {host}" if host else "")


def machine_problem(results: str | os.PathLike, *here: topology_mod.Topology) -> str | None:
    """Why ``results`` is another machine's folder (its ``machine.json`` matches none of the
    topologies ``here``), or None; None also without a readable ``machine.json``."""
    path = Path(results, paths.MACHINE)
    data = _read_json(path) if path.is_file() else {}
    try:
        recorded = topology_mod.Topology.from_dict(data["topology"], source=str(path))
    except (KeyError, TypeError, topology_mod.TopologyError):
        return None
    if any(same_machine(recorded, t) for t in here):
        return None
    host = (data.get("host") or {}).get("hostname")
    return (
        f"{path} records another machine ({describe(recorded, host)}) than this one "
        f"({describe(here[-1])})"
    )


def refusal(plan, measuring: int, problem: str, dry_run: bool) -> str:
    """The one line of a run refused for ``problem`` (``machine_problem``)."""
    what = "a run would measure" if dry_run else "this run would measure"
    return (
        f"numa-effects: {problem}: {what} {measuring} job(s) into it and is refused, so that "
        f"its records stay as they are (nothing in {plan.results}/ is changed); measure into "
        "a folder of its own (--config results=...) and compare the two (docs/comparing.md)"
    )


# -- keeping ------------------------------------------------------------------------------------
@dataclass
class Kept:
    """What ``keep`` did: records newly kept per snapshot, the records this run replaces per
    snapshot (whose tables were written), and how many were copied rather than linked."""

    folder: str
    linked: Counter = field(default_factory=Counter)
    replaced: Counter = field(default_factory=Counter)
    copied: int = 0
    tables_problem: str | None = None  # why a snapshot's tables could not be written


def link_or_copy(src: Path, dest: Path) -> bool:
    """Hard-link ``src`` at ``dest`` (True), or copy it where the filesystem refuses a link
    (another filesystem, no hard links: False). Never overwrites ``dest``."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dest)
        return True
    except FileExistsError:
        raise
    except OSError:
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
        shutil.copy2(src, tmp)
        try:
            os.link(tmp, dest)  # never over a record that appeared meanwhile
        finally:
            tmp.unlink()
        return False


def _same(a: Path, b: Path) -> bool:
    with contextlib.suppress(OSError):
        return os.path.samefile(a, b) or filecmp.cmp(a, b, shallow=False)
    return False


def _place(src: Path, history: Path, rel: str, code: str) -> tuple[str, bool | None]:
    """(snapshot holding ``src`` at ``rel``, linked: True, copied: False, already there: None);
    the snapshots of ``code``'s records are ``code``, ``code.2``, ..."""
    for n in itertools.count(1):
        name = code if n == 1 else f"{code}.{n}"
        if not (history / name / rel).exists():
            return name, link_or_copy(src, history / name / rel)
        if _same(src, history / name / rel):
            return name, None


def keep(results: str | os.PathLike, replaced=()) -> Kept:
    """Keep every measured record of ``results`` in its history; ``replaced``: the records the
    run measures again, whose snapshots get their tables. Idempotent; never changes a record."""
    root = Path(results)
    history = root / HISTORY
    index = _read_json(history / INDEX)
    replaced = {os.path.relpath(p, root) for p in replaced}
    kept = Kept(str(history))
    changed = False
    for rel in measured_files(root):
        src = root / rel
        try:
            st = src.stat()
        except FileNotFoundError:
            continue
        stamp = f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
        entry = index.get(rel) or {}
        name = entry.get("snapshot")
        if entry.get("stamp") != stamp or not (history / str(name) / rel).exists():
            name, linked = _place(src, history, rel, recorded_code(root, rel) or UNKNOWN)
            index[rel] = {"stamp": stamp, "snapshot": name}
            changed = True
            if linked is not None:
                kept.linked[name] += 1
                kept.copied += not linked
        if rel in replaced:
            kept.replaced[name] += 1
    if changed:
        history.mkdir(parents=True, exist_ok=True)
        tmp = history / f".{INDEX}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(index, indent=0, sort_keys=True))
        os.replace(tmp, history / INDEX)
    for name in kept.replaced:
        try:
            write_tables(history / name, root)
        except Exception as exc:  # the records are kept: a table is a convenience, say why
            kept.tables_problem = f"{history / name}: {type(exc).__name__}: {exc}"
    return kept


def write_tables(snapshot: Path, results: Path) -> None:
    """A snapshot as a folder ``compare`` reads: its cells' and peaks' tables and machine.json."""
    from numa_effects.tables import cells, peak, tidy

    (snapshot / "tables").mkdir(parents=True, exist_ok=True)
    records = sorted(str(p) for p in snapshot.glob(glob_of(paths.CELL)))
    if records:
        table, samples = cells.tables(records)
        tidy.write(table, str(snapshot / paths.table("cells")))
        tidy.write(samples, str(snapshot / paths.table("samples")))
    peaks = sorted(str(p) for p in snapshot.glob(glob_of(paths.PEAK)))
    if peaks:
        tidy.write(peak.table(peaks), str(snapshot / paths.table("peak")))
    machine = results / paths.MACHINE
    if machine.is_file() and not (snapshot / paths.MACHINE).exists():
        link_or_copy(machine, snapshot / paths.MACHINE)


def compare_command(results: str, snapshot: str) -> str:
    """The one line that compares a snapshot (before) with the results folder (after)."""
    return (
        f"snakemake --cores 1 compare --config results={results}-compare "
        f"'compare={{runs: [{results}/{HISTORY}/{snapshot}, {results}], "
        "labels: [before, after]}'"
    )


def comparable(results: str | os.PathLike) -> list[str]:
    """The snapshots of ``results`` that hold tables, the most recent first."""
    history = Path(results, HISTORY)
    found = [p.parent.parent for p in history.glob(f"*/{paths.table('cells')}")]
    found.sort(key=lambda p: (p / paths.table("cells")).stat().st_mtime, reverse=True)
    return [p.name for p in found]


def summary_lines(results: str, most: int = 3) -> list[str]:
    """The ``most`` recent snapshots a re-run replaced, each with its compare command."""
    names = comparable(results)
    lines = [
        f"  previous records (replaced by a re-run): {results}/{HISTORY}/{name}/; "
        f"before vs after: {compare_command(results, name)}"
        for name in names[:most]
    ]
    if len(names) > most:
        lines.append(f"  and {len(names) - most} earlier snapshot(s) in {results}/{HISTORY}/")
    return lines


def kept_line(results: str, kept: Kept) -> str | None:
    """The run's line about what it kept (None when it kept nothing new and replaces nothing)."""
    if not kept.linked and not kept.replaced:
        return None
    text = f"numa-effects: {sum(kept.linked.values())} record(s) newly kept in {kept.folder}/"
    if kept.copied:
        text += f" ({kept.copied} copied: no hard links there)"
    for name, n in sorted(kept.replaced.items()):
        text += (
            f"; the {n} this run replaces are in {kept.folder}/{name}/ "
            f"(before vs after, once it has run: {compare_command(results, name)})"
        )
    if kept.tables_problem:
        text += f"; no tables for compare in {kept.tables_problem}"
    return text


# -- the start of a run -----------------------------------------------------------------------
def _problem(plan) -> str | None:
    problem = machine_problem(plan.results, plan.topology)
    # the planning topology is a file (a cluster's nodes, a capture): this machine's too
    return problem and machine_problem(plan.results, plan.topology, topology_mod.current())


def dry_run_lines(plan, raw: list[dict], more_later: bool = False) -> list[str]:
    """What ``snakemake -n`` prints: the measuring jobs and the refusal a run would meet;
    ``more_later``: the two-stage checkpoint runs (it adds replicates only above the first
    stage)."""
    found = jobs(plan, raw)
    more_later = more_later and stages.adds_replicates(plan.two_stage)
    problem = (found or more_later) and _problem(plan)
    kept_in = "" if problem else f"{plan.results}/{HISTORY}/"
    lines = [remeasure.line(found, True, more_later, kept_in)]
    return lines + ([refusal(plan, len(found), problem, dry_run=True)] if problem else [])


def start(plan, raw: list[dict], more_later: bool = False) -> list[str]:
    """Before the first job of a run: refuse another machine's folder (``Refused``), else keep
    every record (``keep``); the lines to print. Nothing to measure: nothing done."""
    found = jobs(plan, raw)
    more_later = more_later and stages.adds_replicates(plan.two_stage)
    if not found and not more_later:
        return []
    problem = _problem(plan)
    if problem:
        raise Refused(refusal(plan, len(found), problem, dry_run=False))
    replaced = [j.output for j in found if j.why != "new"]
    try:
        kept = keep(plan.results, replaced)
    except OSError as exc:
        raise Refused(
            f"numa-effects: cannot keep the records of {plan.results}/ before measuring "
            f"({exc}); nothing was measured and no record replaced"
        ) from exc
    progress.start(plan.results, {j.output: remeasure.estimate_seconds([j]) for j in found})
    lines = [remeasure.line(found, False, more_later)]
    return lines + [t for t in [kept_line(plan.results, kept)] if t]
