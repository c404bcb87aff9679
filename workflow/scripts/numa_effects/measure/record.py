"""What a measurement job records: one ``Record`` per measurement and one ``GroupRecord`` per
packing or interference job, each one JSON file written atomically (``write``) by
``measure.job``, never edited, read by the tables (``read``).

Format 1 (``schema_version: 1``; a group's file had no version) is read as well: the same keys,
its workload known by the cell's ``kind``. A newer format, or a file of no workflow, is refused
with one line naming it and what to do."""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from numa_effects.measure.workloads import WORKLOADS
from numa_effects.plan import spec as spec_mod

FORMAT = 2
# format 1 named a record's workload by its cell's kind
KINDS = {"peak": spec_mod.PEAK, "memory": spec_mod.MEMORY}


class FormatError(ValueError):
    """A result file this code cannot read (one line: which file, what to do)."""


@dataclass(frozen=True)
class Failure:
    """Why a measurement has no result (``cause``: a ``causes.Cause``) and what its process left."""

    cause: str
    message: str
    returncode: int | None = None
    signal: str | None = None
    stderr_tail: str | None = None
    log: str | None = None
    command_line: str | None = None
    wall_s: float | None = None
    max_memory_mb: int | None = None

    def to_json(self) -> dict:
        return {k: v for k, v in vars(self).items() if v is not None or k in ("cause", "message")}

    @classmethod
    def from_json(cls, d: dict | None) -> Failure | None:
        return cls(**{k: d.get(k) for k in cls.__dataclass_fields__}) if d else None

    def prefixed(self, where: str) -> Failure:
        """The same failure, its message prefixed with ``where`` (a configuration's name)."""
        return replace(self, message=f"{where}: {self.message}")


@dataclass(frozen=True)
class Record:
    """One measurement's record. ``status``: ``ok``; ``contended`` (no clean timed iteration:
    no ``stats``); ``failed`` (``failure`` says why); ``skipped`` (``skip_reason``)."""

    status: str
    cell: dict  # the table's keys and what the workload read (``plan.spec``)
    workload: str = spec_mod.MODEL
    replicate: int = 1  # which independent process (group) of the cell this is, 1-based
    plan: dict | None = None  # the planned binding of a single instance (None for k > 1)
    settings: dict = field(default_factory=dict)
    # warm-up and timed latencies (s), per iteration foreign_pct and excluded, stop reason, times
    measurement: dict = field(default_factory=dict)
    stats: dict | None = None  # stats.summarize over the clean timed iterations
    throughput: dict | None = None  # images per second
    # what the process found in force, and ``verification``: the in-process checks
    binding: dict = field(default_factory=dict)
    # the machine's load before, the window's and the iterations' verdict (timing.judge)
    contention: dict = field(default_factory=dict)
    # command line, versions, environment, host, Slurm, timestamps, peak RSS, warnings
    provenance: dict = field(default_factory=dict)
    failure: Failure | None = None
    instances: tuple = ()  # per pinned instance: plan, command, latencies, statistics, binding
    allocator: dict | None = None  # name, library, version, environment, as found where it ran
    summary: dict | None = None  # the workload's entry (its key: ``WORKLOADS[workload].key``)
    report: dict | None = None  # the instance's raw report, where the workload keeps it
    skip_reason: str | None = None
    code: str | None = None  # the digest of the measuring code that made it (plan.code)

    @property
    def verification(self) -> dict:
        return self.binding.get("verification") or {}

    @property
    def hostname(self) -> str | None:
        return (self.provenance.get("host") or {}).get("hostname")

    def version(self, package: str) -> str | None:
        return (self.provenance.get("versions") or {}).get(package)

    @property
    def command_line(self) -> str | None:
        """The instance's command line (a failed one's too)."""
        return self.provenance.get("command_line") or (self.failure and self.failure.command_line)

    @property
    def mempolicy(self) -> str | None:
        """The memory policy read back as ``bind:0`` (None: not read): the tables' column."""
        pol = self.binding.get("mempolicy") or {}
        return f"{pol.get('mode')}:{','.join(map(str, pol.get('nodes', [])))}" if pol else None

    def to_json(self) -> dict:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out = {"format": FORMAT, **out, "instances": list(self.instances)}
        out["failure"] = self.failure.to_json() if self.failure else None
        out[WORKLOADS[self.workload].key] = out.pop("summary")
        return out

    @classmethod
    def from_json(cls, d: dict, where: str = "this record") -> Record:
        version = _format(d, where)
        if version == 1:
            workload = KINDS.get((d.get("cell") or {}).get("kind"), spec_mod.MODEL)
        else:
            workload = d["workload"]
        key = WORKLOADS[workload].key
        kw = {k: d[k] for k in cls.__dataclass_fields__ if d.get(k) is not None}
        kw.update(
            workload=workload, summary=d.get(key), failure=Failure.from_json(d.get("failure"))
        )
        kw["instances"] = tuple(d.get("instances") or ())
        if version == 1 and workload == spec_mod.MODEL:
            kw["report"] = None  # format 1 kept a model's inspection as its ``precision``
        return cls(**kw)


@dataclass(frozen=True)
class GroupRecord:
    """A packing or interference job's record: its ``runs`` (``Record``s by configuration, in
    replicate order); ``failed`` when it could not start or any measurement failed (the first
    one's ``failure``, prefixed with its configuration)."""

    kind: str
    job: dict
    status: str
    settings: dict
    provenance: dict
    configurations: dict
    placements: dict
    runs: dict = field(default_factory=dict)
    choice: dict | None = None
    allocator: dict | None = None
    failure: Failure | None = None
    code: str | None = None  # the digest of the measuring code that made it (plan.code)
    stopped: str | None = None  # why it stopped before its schedule's end (None: it did not)

    def to_json(self) -> dict:
        out = {"format": FORMAT, **{k: getattr(self, k) for k in self.__dataclass_fields__}}
        out["runs"] = {n: [r.to_json() for r in recs] for n, recs in self.runs.items()}
        out["failure"] = self.failure.to_json() if self.failure else None
        return out

    @classmethod
    def from_json(cls, d: dict, where: str = "this record") -> GroupRecord:
        if "format" in d:  # format 1: no version, and no kind for a packing job
            _format(d, where)
        kw = {k: d.get(k) for k in cls.__dataclass_fields__}
        for k in ("settings", "provenance", "configurations", "placements"):
            kw[k] = kw[k] or {}
        kw.update(kind=d.get("kind", "packing"), job=d["job"], status=d["status"])
        kw["runs"] = {n: tuple(_run(r, where) for r in rs) for n, rs in d.get("runs", {}).items()}
        kw["failure"] = Failure.from_json(d.get("failure"))
        return cls(**kw)


def _run(d: dict, where: str) -> Record:
    """A group's measurement; an old one had no version, no cell, its verdict at the top."""
    if "format" in d or "schema_version" in d:
        return Record.from_json(d, where)
    return Record(
        status=d["status"],
        cell={},
        replicate=int(d.get("replicate", 1)),
        measurement=d.get("measurement") or {},
        stats=d.get("stats"),
        contention={"contended": bool(d.get("contended"))},
        instances=tuple(d.get("instances") or ()),
    )


def _format(d: dict, where: str) -> int:
    version = d.get("format", 1 if d.get("schema_version") == 1 else None)
    if version is None:
        raise FormatError(f"{where}: not a result of this workflow (no format); re-run its job")
    if version > FORMAT:
        raise FormatError(
            f"{where}: result format {version} is newer than this workflow reads ({FORMAT}); "
            "update the workflow (git pull) or re-run the job with this one"
        )
    return version


# where ``write`` puts a record's version: the first key of the file
HEAD = re.compile(r'\A\{\s*"(format|schema_version)":\s*(\d+)')


def format_problem(path: str | os.PathLike, group: bool = False) -> str | None:
    """Why this code cannot read the record at ``path`` (the ``FormatError`` line), or None;
    the whole file is read only where its head does not name the version. ``group``: a group
    job's record (format 1 had no version)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(256).decode("utf-8", "replace")
        m = HEAD.match(head)
        d = {m.group(1): int(m.group(2))} if m else json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        return f"{path}: cannot be read as a record ({type(exc).__name__}); re-run its job"
    if not isinstance(d, dict) or (group and "format" not in d):
        return None if isinstance(d, dict) else f"{path}: not a result of this workflow"
    try:
        _format(d, str(path))
    except FormatError as exc:
        return str(exc)
    return None


def write(path: str | os.PathLike, record: Record | GroupRecord | dict) -> None:
    """A record's (or any document's) JSON, atomically: a reader never sees half a file."""
    data = record if isinstance(record, dict) else record.to_json()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=1, sort_keys=False, allow_nan=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates 0600; give the file the mode a plain open() would (shared folders):
        # the umask can only be read by setting it
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read(path: str | os.PathLike) -> Record:
    """The record of a measurement's result file."""
    with open(path) as fh:
        return Record.from_json(json.load(fh), str(path))


def read_group(path: str | os.PathLike) -> GroupRecord:
    """The record of a packing or interference job's result file."""
    with open(path) as fh:
        return GroupRecord.from_json(json.load(fh), str(path))
