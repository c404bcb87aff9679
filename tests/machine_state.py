"""What the tests may change on this machine, taken before they run and compared after.

The Slurm tests install Slurm and munge, write /etc/slurm/slurm.conf and start daemons
(tests/slurm/start-slurm); the guest tests start QEMU. All of that must be gone when the tests
end, whatever their outcome: a slurm.conf left without its controller makes every later start
of Snakemake wait ~10 s (numa_effects.slurmconf). ``snapshot()`` records what is there;
``compare(before, after)`` gives one line per thing left behind:

- a Slurm or munge config file or folder that was not there before (or changed),
- a daemon of those (slurmctld, slurmd, slurmstepd, munged) or a QEMU guest started since,
- a Slurm or munge package installed since (packages installed for other tests, such as the
  guest's QEMU, are test dependencies like numactl and stay),
- a Slurm config that now makes Snakemake wait for its controller,
- with ``--snakemake``: ``snakemake --version`` slower than ``SLOWER`` allows.

New entries of /tmp are listed as notes, not failures (pytest keeps its own folders of a failed
run on purpose). tests/conftest.py runs the check around a session that runs the ``slurm`` or
``numa_vm`` tests; .ci/run around ``make test``:

    python tests/machine_state.py snapshot FILE [--snakemake .venv/bin/snakemake]
    python tests/machine_state.py compare FILE [--snakemake .venv/bin/snakemake]

(with ``PYTHONPATH=workflow/scripts``, for numa_effects.slurmconf). Exit status 1 when
something was left behind.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from numa_effects import slurmconf

# Files and folders the Slurm tests write or create.
WATCHED_PATHS = (
    "/etc/slurm",
    "/etc/munge",
    "/run/munge",
    "/run/numa-effects-slurm",
    "/var/lib/numa-effects-slurm",
    "/var/log/numa-effects-slurm",
    *slurmconf.DEFAULT_PATHS,
)
DAEMONS = ("slurmctld", "slurmd", "slurmstepd", "munged")
GUEST_PREFIX = "qemu-system-"
PACKAGE_WORDS = ("slurm", "munge")
TMP = Path("/tmp")
TMP_OWNED_BY_PYTEST = "pytest-of-"
# `snakemake --version` after the tests may take at most max(FACTOR x before, before + MARGIN_S)
# (the best of RUNS each time): a stale Slurm config adds ~9 s; a busy machine adds noise.
SLOWER_FACTOR, SLOWER_MARGIN_S, RUNS = 2.0, 2.0, 3


def _digest(path: Path) -> str:
    if path.is_dir():
        return "folder: " + ", ".join(sorted(p.name for p in path.iterdir()))
    return "file " + hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def paths() -> dict[str, str]:
    out = {}
    for p in map(Path, WATCHED_PATHS):
        try:
            if p.exists():
                out[str(p)] = _digest(p)
        except OSError as exc:  # unreadable: its existence is what counts
            out[str(p)] = f"unreadable ({exc.strerror})"
    return out


def processes() -> dict[str, str]:
    """{pid: name} of the daemons and guests the tests may start."""
    found = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv0 = (d / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        name = os.path.basename(argv0)
        if name in DAEMONS or name.startswith(GUEST_PREFIX):
            found[d.name] = name
    return found


def packages() -> list[str]:
    """Installed Debian packages whose name holds a word of ``PACKAGE_WORDS``."""
    if not shutil.which("dpkg-query"):
        return []
    out = subprocess.run(
        ["dpkg-query", "-W", "-f", "${db:Status-Abbrev} ${Package}\\n"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    names = (line.split()[1] for line in out.splitlines() if line.startswith("ii "))
    return sorted(n for n in names if any(w in n for w in PACKAGE_WORDS))


def snakemake_seconds(snakemake: str, env: Mapping[str, str]) -> float:
    """The best of ``RUNS`` wall times of ``snakemake --version``."""
    best = float("inf")
    for _ in range(RUNS):
        start = time.monotonic()
        subprocess.run([snakemake, "--version"], capture_output=True, env=dict(env), check=False)
        best = min(best, time.monotonic() - start)
    return round(best, 2)


def snapshot(env: Mapping[str, str] | None = None, snakemake: str | None = None) -> dict:
    """This machine's state as the tests may change it. ``env``: the environment a user's
    Snakemake would have (the tests point SLURM_CONF elsewhere for their own)."""
    env = os.environ if env is None else env
    stale = slurmconf.stale(env)
    state = {
        "paths": paths(),
        "processes": processes(),
        "packages": packages(),
        "stale_slurm": slurmconf.note(stale) if stale else None,
        "tmp": sorted(p.name for p in TMP.iterdir()) if TMP.is_dir() else [],
    }
    if snakemake:
        state["snakemake_s"] = snakemake_seconds(snakemake, env)
    return state


def compare(before: dict, after: dict) -> tuple[list[str], list[str]]:
    """(what was left behind, notes): one line each."""
    left = []
    for path, what in sorted(after["paths"].items()):
        if path not in before["paths"]:
            left.append(f"{path} was not there before the tests ({what})")
        elif before["paths"][path] != what:
            left.append(f"{path} changed during the tests ({before['paths'][path]} -> {what})")
    for pid, name in sorted(after["processes"].items()):
        if before["processes"].get(pid) != name:
            left.append(f"{name} (pid {pid}) started during the tests and still runs")
    added = sorted(set(after["packages"]) - set(before["packages"]))
    if added:
        left.append(f"packages installed during the tests and still there: {', '.join(added)}")
    if after["stale_slurm"] and not before["stale_slurm"]:
        left.append(f"a Slurm config now makes Snakemake wait: {after['stale_slurm']}")
    if "snakemake_s" in before and "snakemake_s" in after:
        was, now = before["snakemake_s"], after["snakemake_s"]
        if now > max(SLOWER_FACTOR * was, was + SLOWER_MARGIN_S):
            left.append(f"`snakemake --version` takes {now} s, {was} s before the tests")
    notes = [
        f"/tmp/{name} was created during the tests"
        for name in sorted(set(after["tmp"]) - set(before["tmp"]))
        if not name.startswith(TMP_OWNED_BY_PYTEST)
    ]
    return left, notes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["snapshot", "compare"])
    ap.add_argument("file", type=Path, help="where the snapshot before the tests is kept")
    ap.add_argument("--snakemake", help="also time `SNAKEMAKE --version`")
    args = ap.parse_args(argv)
    now = snapshot(snakemake=args.snakemake)
    if args.action == "snapshot":
        args.file.write_text(json.dumps(now, indent=1))
        timing = f"; snakemake --version {now['snakemake_s']} s" if args.snakemake else ""
        print(f"machine state before the tests: {args.file}{timing}")
        return 0
    left, notes = compare(json.loads(args.file.read_text()), now)
    for line in notes:
        print(f"machine state: note: {line}")
    for line in left:
        print(f"machine state: left behind: {line}", file=sys.stderr)
    if not left:
        timing = f" (snakemake --version {now['snakemake_s']} s)" if args.snakemake else ""
        print(f"machine state: as before the tests{timing}")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
