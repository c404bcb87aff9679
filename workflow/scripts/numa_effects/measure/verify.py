"""Proof, from inside the running cell, that its threads and memory sit where the plan says.

Called by ``cell`` after the timed iterations (reading /proc cannot disturb a timing) and
recorded as ``binding.verification``. Checks: ``cpus`` (``Cpus_allowed_list`` equals the plan),
``mempolicy`` (get_mempolicy(2) gives the planned mode and nodes; the cpuset's
``Mems_allowed_list`` must contain them: ``numactl --membind=1`` leaves it at all nodes),
``threads`` (every task last ran on, and may only use, planned CPUs), ``pages`` (anonymous memory
in numa_maps: ``MIN_SHARE`` on the planned nodes; interleaved, each node at least
``INTERLEAVE_MIN_OF_EVEN`` of an even share) and ``check_allocator`` (its library mapped, no
other one). A failed check is a failed cell, never a measurement with a warning.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from numa_effects.measure import provenance
from numa_effects.measure.causes import Cause
from numa_effects.plan import cpulist

MIN_SHARE = 0.90  # of anonymous memory on the planned node(s)
# Each interleaved node must hold at least half of an even share, not "near even": interleave
# round-robins per allocation and a 2 MiB huge page is one step like a 4 KiB page, so byte
# shares drift (65.4 / 34.6 % seen on 2 nodes); memory that ignored the policy is ~100 / 0.
INTERLEAVE_MIN_OF_EVEN = 0.5

_NODE_COUNT = re.compile(r"^N(\d+)=(\d+)$")
_KEY_VALUE = re.compile(r"^([a-zA-Z_]+)=(\d+)$")


@dataclass(frozen=True)
class Mapping:
    """One line of numa_maps."""

    address: str
    policy: str  # the VMA's policy as printed: "default", "bind:1", "interleave:0-1", ...
    kind: str  # "anon", "heap", "stack", "file" or "huge" (hugetlbfs)
    page_kb: int  # kernelpagesize_kB: the unit of the N<node>= counts
    pages_by_node: dict[int, int] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)  # anon=, dirty=, mapped=, ...

    @property
    def anonymous(self) -> bool:
        """Memory with no backing file: heap, stack and anonymous mmaps (PyTorch's tensors)."""
        return self.kind in ("anon", "heap", "stack")

    def kb_by_node(self) -> dict[int, int]:
        return {n: pages * self.page_kb for n, pages in self.pages_by_node.items()}


def parse_numa_maps(text: str) -> list[Mapping]:
    """Parse ``/proc/<pid>/numa_maps`` (proc(5)): ``<start> <policy> [file=<path>|heap|stack|
    huge] key=value... N<node>=<pages>``. A path may contain spaces: tokens are classified by
    form, not by position."""
    out: list[Mapping] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        address, policy, rest = parts[0], parts[1], parts[2:]
        kind = "anon"
        nodes: dict[int, int] = {}
        counters: dict[str, int] = {}
        page_kb = 4
        for tok in rest:
            m = _NODE_COUNT.match(tok)
            kv = _KEY_VALUE.match(tok)
            if m:
                nodes[int(m.group(1))] = nodes.get(int(m.group(1)), 0) + int(m.group(2))
            elif tok.startswith("file="):
                kind = "file"
            elif (tok in ("heap", "stack") and kind == "anon") or tok == "huge":
                kind = tok
            elif kv and kv.group(1) == "kernelpagesize_kB":
                page_kb = int(kv.group(2))
            elif kv:
                counters[kv.group(1)] = int(kv.group(2))
        out.append(Mapping(address, policy, kind, page_kb, nodes, counters))
    return out


def anon_kb_by_node(mappings: list[Mapping]) -> dict[int, int]:
    """Resident anonymous memory per NUMA node, in KiB."""
    total: Counter = Counter()
    for m in mappings:
        if m.anonymous:
            total.update(m.kb_by_node())
    return dict(sorted(total.items()))


STAT_PROCESSOR_FIELD = 39  # "CPU number last executed on", proc(5), 1-based


def parse_task_stat(text: str) -> dict:
    """tid, comm, state, processor of a ``stat`` line; ``comm`` may contain spaces and ')', so
    the line is split at the last ')' (the fields after it start with field 3)."""
    text = text.strip()
    lp, rp = text.find("("), text.rfind(")")
    if lp < 0 or rp < lp:
        raise ValueError(f"not a /proc stat line: {text[:80]!r}")
    fields = text[rp + 1 :].split()
    index = STAT_PROCESSOR_FIELD - 3
    if len(fields) <= index:
        raise ValueError(f"stat line has {len(fields) + 2} fields, need {STAT_PROCESSOR_FIELD}")
    return {
        "tid": int(text[:lp].strip()),
        "comm": text[lp + 1 : rp],
        "state": fields[0],
        "processor": int(fields[index]),
    }


def read_tasks(proc: str | os.PathLike = "/proc/self") -> list[dict]:
    """Every task (thread) of the process: tid, comm, last CPU, allowed CPUs."""
    tasks = []
    for task_dir in sorted(Path(proc, "task").iterdir(), key=lambda p: int(p.name)):
        try:
            stat = parse_task_stat((task_dir / "stat").read_text())
            status = provenance.proc_status(str(task_dir / "status"))
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread exited while we looked
        tasks.append(
            {
                "tid": stat["tid"],
                "comm": stat["comm"],
                "last_cpu": stat["processor"],
                "cpus_allowed": status.get("Cpus_allowed_list", ""),
            }
        )
    return tasks


def check_cpus(plan: dict, cpus_allowed_list: str) -> str | None:
    if cpulist.parse(cpus_allowed_list) != tuple(plan["cpus"]):
        return f"Cpus_allowed_list is {cpus_allowed_list}, the plan is {plan['cpu_list']}"
    return None


def check_mempolicy(plan: dict, mempolicy: dict, mems_allowed_list: str) -> str | None:
    want_mode = plan["mem_policy"] if plan["mem_policy"] in ("bind", "local") else "interleave"
    want_nodes = tuple(plan["mem_nodes"])
    mode = mempolicy.get("mode")
    if mode == "unknown" or mode is None:
        return f"memory policy could not be read ({mempolicy.get('error', 'no read-back')})"
    if want_mode == "local":  # numactl --localalloc, or no policy at all: first touch
        if mode in ("local", "default"):
            return None
        return f"memory policy is {mode}, the plan is local allocation"
    if mode != want_mode or tuple(mempolicy.get("nodes", ())) != want_nodes:
        got = f"{mode}:{cpulist.format(mempolicy.get('nodes', ()))}"
        return f"memory policy is {got}, the plan is {want_mode}:{plan['mem_list']}"
    if mems_allowed_list and not set(want_nodes) <= set(cpulist.parse(mems_allowed_list)):
        return f"Mems_allowed_list {mems_allowed_list} excludes planned nodes {plan['mem_list']}"
    return None


def check_threads(plan: dict, tasks: list[dict]) -> tuple[dict, str | None]:
    planned = set(plan["cpus"])
    outside = [t for t in tasks if t["last_cpu"] not in planned]
    widened = [
        t
        for t in tasks
        if t["cpus_allowed"] and not set(cpulist.parse(t["cpus_allowed"])) <= planned
    ]
    summary = {
        "n_tasks": len(tasks),
        "last_cpus": cpulist.format(t["last_cpu"] for t in tasks),
        "outside_plan": [t["tid"] for t in outside],
        "widened_affinity": [t["tid"] for t in widened],
        "tasks": tasks,
    }
    problems = []
    for bad, head, what in (
        (outside, f"{len(outside)} of {len(tasks)} threads ran", "on CPU {last_cpu}"),
        (widened, f"{len(widened)} threads may run", "may use {cpus_allowed}"),
    ):
        if bad:
            desc = ", ".join(f"{t['comm']}[{t['tid']}] " + what.format(**t) for t in bad[:5])
            problems.append(f"{head} outside {plan['cpu_list']}: {desc}")
    return summary, "; ".join(problems) or None


def check_pages(plan: dict, kb_by_node: dict[int, int]) -> tuple[dict, str | None]:
    total = sum(kb_by_node.values())
    planned = tuple(plan["mem_nodes"])
    shares = {n: (kb / total if total else 0.0) for n, kb in kb_by_node.items()}
    on_plan = sum(shares.get(n, 0.0) for n in planned)
    summary = {
        "anon_kb_by_node": {str(n): kb for n, kb in kb_by_node.items()},
        "anon_kb": total,
        "share_by_node": {str(n): round(s, 4) for n, s in shares.items()},
        "share_on_plan": round(on_plan, 4),
        "min_share": MIN_SHARE,
    }
    if total == 0:
        return summary, "numa_maps shows no resident anonymous memory"
    if on_plan < MIN_SHARE:
        where = ", ".join(f"node {n}: {s:.1%}" for n, s in shares.items())
        return summary, (
            f"{on_plan:.1%} of anonymous memory is on planned node(s) {plan['mem_list']} "
            f"(need {MIN_SHARE:.0%}); {where}"
        )
    if plan["mem_policy"] == "interleave" and len(planned) > 1:
        even = 1.0 / len(planned)
        floor = INTERLEAVE_MIN_OF_EVEN * even
        summary["interleave_min_share"] = floor
        summary["max_deviation_from_even"] = round(
            max(abs(shares.get(n, 0.0) - even) for n in planned), 4
        )
        if min(shares.get(n, 0.0) for n in planned) < floor:
            where = ", ".join(f"node {n}: {shares.get(n, 0.0):.1%}" for n in planned)
            return summary, (
                f"interleaved memory is uneven ({where}; each node must hold at least {floor:.0%})"
            )
    return summary, None


# what a verification record keeps of the binding it read back
BINDING_KEYS = ("cpus_allowed_list", "mems_allowed_list", "mempolicy")


def _verdict(found) -> dict:
    """``ok``, ``cause`` and ``problems`` of (check, cause, message or None) results."""
    problems = [{"check": c, "cause": cause, "message": m} for c, cause, m in found if m]
    return {
        "ok": not problems,
        "cause": problems[0]["cause"] if problems else None,
        "problems": problems,
    }


def _binding_checks(plan: dict, binding: dict) -> list[tuple]:
    """The checks of the process's own binding (CPUs, memory policy)."""
    policy, mems = binding.get("mempolicy") or {}, binding.get("mems_allowed_list", "")
    return [
        ("cpus", Cause.BINDING_MISMATCH, check_cpus(plan, binding.get("cpus_allowed_list", ""))),
        ("mempolicy", Cause.BINDING_MISMATCH, check_mempolicy(plan, policy, mems)),
    ]


def evaluate(plan: dict, binding: dict, tasks: list[dict], kb_by_node: dict[int, int]) -> dict:
    """All four checks on observed data; pure. Returns the ``verification`` record."""
    threads, why_threads = check_threads(plan, tasks)
    pages, why_pages = check_pages(plan, kb_by_node)
    found = [
        ("threads", Cause.BINDING_MISMATCH, why_threads),
        ("pages", Cause.PAGE_PLACEMENT, why_pages),
    ]
    return {**_verdict(_binding_checks(plan, binding) + found), "threads": threads, "pages": pages}


def at_start(plan: dict, binding: dict | None = None) -> dict:
    """The CPU and memory policy checks, made when the process starts (before torch's import):
    a binding wrong there stays wrong, so the cell fails at once instead of after its whole
    measurement. ``binding``: read now when None."""
    binding = binding or provenance.binding()
    return {**_verdict(_binding_checks(plan, binding)), "stage": "start", **_kept(binding)}


def _kept(binding: dict) -> dict:
    return {"binding": {k: binding.get(k) for k in BINDING_KEYS}}


def anon_huge_kb(smaps_rollup: str) -> int | None:
    """``AnonHugePages`` of ``/proc/<pid>/smaps_rollup`` (None: not reported). With THP
    ``always`` it varies with each process's alignment: a candidate source of between-process
    variance, recorded per replicate."""
    m = re.search(r"^AnonHugePages:\s+(\d+) kB", smaps_rollup, re.M)
    return int(m.group(1)) if m else None


def run(plan: dict) -> dict:
    """This process, read now, evaluated against ``plan``."""
    binding = provenance.binding()
    mappings = parse_numa_maps(Path("/proc/self/numa_maps").read_text())
    result = evaluate(plan, binding, read_tasks(), anon_kb_by_node(mappings))
    result["pages"]["mappings"] = sum(1 for m in mappings if m.anonymous)
    try:  # Linux >= 4.14
        result["pages"]["anon_huge_kb"] = anon_huge_kb(Path("/proc/self/smaps_rollup").read_text())
    except OSError:
        result["pages"]["anon_huge_kb"] = None
    return {**result, **_kept(binding)}


def check_allocator(verification: dict, allocator: dict, maps_text: str | None = None) -> dict:
    """Add the allocator check to ``verification`` (in place, and returned): the labelled
    library mapped and no other allocator (``plan.allocators.verify``). ``allocator``: the
    spec's record of it (``job.allocator_here``), so no registry entry is needed. With
    ``heap_probe`` the process mallocs that much and reads its maps while holding it."""
    from numa_effects.plan import allocators

    library = allocator.get("library")
    alloc = allocators.Allocator(
        allocator["name"],
        "",
        sonames=(library,) if library else (),
        maps_key=allocator.get("maps_key"),
        env={k: v for k, v in (allocator.get("env") or {}).items() if k != "LD_PRELOAD"},
        heap_probe=int(allocator.get("heap_probe") or 0),
    )
    address = None
    if maps_text is None and alloc.heap_probe:
        address, maps_text = allocators.probe(alloc.heap_probe)
    elif maps_text is None:
        maps_text = Path("/proc/self/maps").read_text()
    got = allocators.verify(alloc, maps_text, address)
    verification["allocator"] = {"name": alloc.name, "library": library, "mapped": got["mapped"]}
    if "heap_probe" in got:
        verification["allocator"]["heap_probe"] = got["heap_probe"]
    if not got["ok"]:
        cause = Cause[got["cause"].upper()]  # allocator_not_loaded | foreign_allocator
        verification["problems"].append(
            {"check": "allocator", "cause": cause, "message": got["message"]}
        )
        verification["ok"] = False
        verification["cause"] = verification.get("cause") or cause
    return verification


def failure_message(verification: dict) -> str:
    return "; ".join(f"{p['check']}: {p['message']}" for p in verification["problems"])
