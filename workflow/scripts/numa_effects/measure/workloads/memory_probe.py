"""The memory probe of the node-pair matrix (docs/placements.md, "The measured memory matrix"):
idle latency by a pointer chase through one random cycle of cache lines, and one core's read
bandwidth by a sequential pass, in a buffer much larger than the last-level cache.

A chase in Python would time the interpreter, so both loops are C (``SOURCE``) compiled at run
time (``compiler``, ``library``) and called through ctypes; without a compiler the probe is
*skipped*, never measured another way. In the pipeline the probe is a workload of the one
measuring stack (``build``, ``summary``: the best clean step, noise only slows a load down);
``measure`` runs it in this process.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from numa_effects.measure.workloads import Built, Skip, WorkloadError

LINE_BYTES = 64  # one pointer per cache line
WORD_BYTES = 8
MIN_BUFFER_BYTES = 256 << 20
LLC_FACTOR = 8  # the buffer is at least this many times the last-level cache
MAX_BUFFER_BYTES = 4 << 30
LOADS = 1 << 20  # loads per timed chase: ~0.1 s at 100 ns, ~0.25 s at 240 ns (the dev VM)
FLAGS = ("-O2", "-shared", "-fPIC")
COMPILE_TIMEOUT_S = 120.0
SEED = 0

SOURCE = r"""
/* numa_effects.measure.workloads.memory_probe: compiled as C (-x c), also by a C++ compiler. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void *probe_alloc(uint64_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, (size_t)2 << 20, (size_t)bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, (size_t)bytes, MADV_HUGEPAGE);
#endif
    memset(p, 0, (size_t)bytes); /* first touch: the pages land where the policy says */
    return p;
}

void probe_free(void *p) { free(p); }

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* One random cycle through the n lines (Sattolo): word i*stride holds the word index of the
   next line. */
void probe_link(uint64_t *buf, uint64_t n, uint64_t stride, uint64_t seed) {
    uint64_t i, j, t, s = seed;
    for (i = 0; i < n; i++) buf[i * stride] = i * stride;
    for (i = n - 1; i > 0; i--) {
        j = splitmix64(&s) % i;
        t = buf[i * stride];
        buf[i * stride] = buf[j * stride];
        buf[j * stride] = t;
    }
}

/* Dependent loads: the next address is the value just loaded. */
uint64_t probe_chase(const uint64_t *buf, uint64_t start, uint64_t loads) {
    uint64_t p = start, i;
    for (i = 0; i < loads; i++) p = buf[p];
    return p;
}

/* A sequential read of every word, eight independent sums. */
uint64_t probe_read(const uint64_t *buf, uint64_t words) {
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0, i;
    for (i = 0; i + 8 <= words; i += 8) {
        a0 += buf[i];
        a1 += buf[i + 1];
        a2 += buf[i + 2];
        a3 += buf[i + 3];
        a4 += buf[i + 4];
        a5 += buf[i + 5];
        a6 += buf[i + 6];
        a7 += buf[i + 7];
    }
    return a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7;
}
"""


class ProbeError(WorkloadError):
    """The probe's C code could not be compiled or its buffer allocated."""


def compiler(environ=None) -> tuple[str | None, str | None]:
    """(path, None) or (None, why none) of ``CC``, else of ``REQUIREMENTS["cxx"]`` on ``PATH``."""
    from numa_effects.plan.optimizations import REQUIREMENTS

    env = os.environ if environ is None else environ
    path = env.get("PATH", os.defpath)
    cc = env.get("CC")
    if cc:
        found = shutil.which(cc, path=path)
        return (found, None) if found else (None, f"CC={cc} is not an executable on PATH")
    req = REQUIREMENTS["cxx"]
    found = req.found(path)
    if found:
        return found, None
    return None, (
        f"no compiler for the memory probe's C code: CC is not set and no {req.name} compiler "
        f"({', '.join(req.targets)}) is on PATH; install: {req.install}"
    )


def library(cc: str, cache_dir: str | os.PathLike | None = None) -> str:
    """The probe's shared library, compiled with ``cc`` once per (source, compiler, flags) into
    ``cache_dir`` under a name of this host and process, then renamed (concurrent jobs sharing
    the folder never load half a file). Raises ``ProbeError`` with the compiler's message."""
    digest = hashlib.sha256("\0".join((SOURCE, cc, *FLAGS)).encode()).hexdigest()[:16]
    # a relative folder (the plan's) is the job's run directory's: made absolute for dlopen
    default = Path(tempfile.gettempdir(), f"numa-effects-{os.getuid()}", "memory_probe")
    cache = Path(os.path.abspath(cache_dir or default))
    lib = cache / f"memory_probe-{digest}.so"
    if lib.exists():
        return str(lib)
    cache.mkdir(parents=True, exist_ok=True)
    src = cache / f"memory_probe-{digest}.c"
    src.write_text(SOURCE)
    tmp = cache / f".memory_probe-{digest}.{os.uname().nodename}.{os.getpid()}.so"
    cmd = [cc, *FLAGS, "-x", "c", str(src), "-o", str(tmp)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProbeError(f"{' '.join(cmd)}: {exc}") from exc
    if done.returncode != 0:
        tmp.unlink(missing_ok=True)
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise ProbeError(f"{' '.join(cmd)} exited {done.returncode}: {tail}")
    os.replace(tmp, lib)
    return str(lib)


def llc_bytes(cpu: int = 0, sysfs: str = "/sys/devices/system/cpu") -> int | None:
    """The size of the highest cache level ``cpu`` sees (sysfs ``cache/index*``), or None."""
    caches: list[tuple[int, int]] = []  # (level, size)
    for index in Path(sysfs, f"cpu{cpu}", "cache").glob("index*"):
        try:
            level = int((index / "level").read_text())
            text = (index / "size").read_text().strip().upper()
            mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            size = int(text.rstrip("KMG")) * mult
        except (OSError, ValueError):
            continue
        caches.append((level, size))
    return max(caches)[1] if caches else None


def buffer_bytes(llc: int | None) -> int:
    """The probe's buffer: at least ``MIN_BUFFER_BYTES`` and ``LLC_FACTOR`` x the last-level
    cache, in whole 2 MiB pages, at most ``MAX_BUFFER_BYTES``."""
    want = max(MIN_BUFFER_BYTES, LLC_FACTOR * (llc or 0))
    huge = 2 << 20
    return min(MAX_BUFFER_BYTES, -(-want // huge) * huge)


class Probe:
    """The linked buffer (first touched here, under the memory policy) and the timed loops."""

    def __init__(self, lib_path: str, size: int):
        if size < 2 * LINE_BYTES:
            raise ValueError(f"a buffer of {size} bytes holds fewer than 2 cache lines")
        lib = ctypes.CDLL(lib_path)
        u64, ptr = ctypes.c_uint64, ctypes.c_void_p
        for name, args, res in (
            ("probe_alloc", [u64], ptr),
            ("probe_free", [ptr], None),
            ("probe_link", [ptr, u64, u64, u64], None),
            ("probe_chase", [ptr, u64, u64], u64),
            ("probe_read", [ptr, u64], u64),
        ):
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, res
        self.lib, self.size = lib, size
        self.lines = size // LINE_BYTES
        self.buf = lib.probe_alloc(size)
        if not self.buf:
            raise ProbeError(f"could not allocate the probe's buffer of {size} bytes")
        lib.probe_link(self.buf, self.lines, LINE_BYTES // WORD_BYTES, SEED)
        self.pos = 0

    def chase(self, loads: int) -> float:
        """Seconds for ``loads`` dependent loads, continuing the cycle where the last stopped."""
        t0 = time.perf_counter()
        self.pos = self.lib.probe_chase(self.buf, self.pos, loads)
        return time.perf_counter() - t0

    def read(self) -> float:
        """Seconds for one sequential read of the whole buffer."""
        t0 = time.perf_counter()
        self.lib.probe_read(self.buf, self.size // WORD_BYTES)
        return time.perf_counter() - t0

    def close(self) -> None:
        if self.buf:
            self.lib.probe_free(self.buf)
            self.buf = None


def rates(times_s: list[list[float]], loads: int, size: int) -> dict:
    """Best and median latency and bandwidth of ``times_s`` (per step: [chase s, read s])."""
    lat = sorted(c / loads * 1e9 for c, _ in times_s if c > 0)
    bw = sorted(size / r / 1e9 for _, r in times_s if r > 0)
    return {
        "latency_ns": lat[0] if lat else None,
        "latency_median_ns": statistics.median(lat) if lat else None,
        "bandwidth_gb_per_s": bw[-1] if bw else None,
        "bandwidth_median_gb_per_s": statistics.median(bw) if bw else None,
        "steps": min(len(lat), len(bw)),
    }


def _facts(lib: str, cc: str | None, size: int, loads: int, llc: int | None) -> dict:
    return {
        "library": lib,
        "compiler": cc,
        "flags": list(FLAGS),
        "buffer_bytes": size,
        "line_bytes": LINE_BYTES,
        "loads_per_step": loads,
        "llc_bytes": llc,
    }


def measure(
    size: int | None = None,
    loads: int = LOADS,
    steps: int = 5,
    cache_dir=None,
    environ=None,
) -> dict:
    """The probe in this process: one untimed step, then ``steps`` timed ones (or skipped)."""
    cc, why = compiler(environ)
    if cc is None:
        return {"status": "skipped", "reason": why}
    lib = library(cc, cache_dir)
    llc = llc_bytes()
    size = size or buffer_bytes(llc)
    t0 = time.perf_counter()
    probe = Probe(lib, size)
    build_s = time.perf_counter() - t0
    try:
        probe.chase(loads)
        probe.read()
        times = [[probe.chase(loads), probe.read()] for _ in range(steps)]
    finally:
        probe.close()
    return {
        "status": "ok",
        **rates(times, loads, size),
        **_facts(lib, cc, size, loads, llc),
        "build_s": build_s,
        "times_s": times,
    }


TORCH = False  # the instance never imports torch: Python's start and the probe are its cost


def prepare(instance, environ=None) -> dict:
    """Where the job runs: the compiled library (``Skip`` without a compiler)."""
    cc, why = compiler(environ)
    if cc is None:
        raise Skip(why)
    cache = (instance.options.get("probe") or {}).get("cache_dir")
    return {"probe": {"compiler": cc, "library": library(cc, cache)}}


def build(instance, settings: dict) -> Built:
    """The probe in a pinned instance, its buffer made under the instance's binding; each step
    one chase and one read pass. ``options["probe"]`` may set ``buffer_bytes`` and ``loads``."""
    probe_spec = {**instance.options.get("probe", {}), **instance.resolved["probe"]}
    llc = llc_bytes(int(instance.plan.cpus[0]))
    size = int(probe_spec.get("buffer_bytes") or buffer_bytes(llc))
    loads = int(probe_spec.get("loads") or LOADS)
    t0 = time.perf_counter()
    probe = Probe(probe_spec["library"], size)
    times: list[list[float]] = []

    def step():
        times.append([probe.chase(loads), probe.read()])

    def report() -> dict:
        return {
            **_facts(probe_spec["library"], probe_spec.get("compiler"), size, loads, llc),
            "torch_loaded": "torch" in sys.modules,  # the instance never needs it
            "times_s": times,
        }

    return Built(step, {"build_s": time.perf_counter() - t0, "prepare_s": 0.0}, [], report)


def summary(instance, report, measurement: dict, clean: bool) -> dict:
    """The ``memory`` entry: ``rates`` over the clean timed steps (none without one)."""
    from numa_effects.measure import timing

    rep = report or {}
    rows = timing.clean_steps(rep, measurement, clean)
    facts = {k: v for k, v in rep.items() if k != "times_s"}
    got = rates(rows, int(rep.get("loads_per_step") or 1), int(rep.get("buffer_bytes") or 0))
    return {**got, **facts, "measure_s": measurement.get("elapsed_s")}


def check(memory) -> None:
    """A probe is never refused after its measurement."""
