"""The registry of memory allocators (the ``allocator`` axis), and how each is found, preloaded
and proven.

``default`` is glibc's malloc as ``python`` uses it; ``glibc_tuned`` is the same malloc kept by
environment variables from giving memory back; the others are preloaded with ``LD_PRELOAD``
(``child_env``), as ``torch.backends.xeon.run_cpu`` does. A preload can fail silently, so the
child proves it from inside (``verify``): the library must be mapped in ``/proc/self/maps``, a
``default`` cell must map none, and glibc's settings must keep a large malloc in the heap
(``probe``). Every cell's environment drops inherited glibc malloc settings first, so an axis
value means one configuration. A missing library skips its cells (``skip_reason``).
Pure except ``locate``, ``ldconfig_text``, ``version``, ``glibc_version`` and ``probe``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from numa_effects.plan.optimizations import by_name

INSTALL_SCRIPT = "tools/install-system-deps --allocators"
# Where a library is looked for when ldconfig does not list it (Debian/Ubuntu multiarch first).
STANDARD_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/local/lib",
    "/usr/lib64",
    "/usr/lib",
)
# torch.backends.xeon.run_cpu's MALLOC_CONF for jemalloc (torch 2.14.1, run_cpu.py)
RUN_CPU_JEMALLOC_CONF = "oversize_threshold:1,background_thread:true,metadata_thp:auto"
# ... plus never returning freed pages to the OS (-1: no decay), as Intel's extension for
# PyTorch sets: with run_cpu's options alone jemalloc gave back and re-faulted the activations
# on every iteration and was slower than glibc on ResNet-50 batch 16 here; with these it was
# ~1.5x faster, like tcmalloc (benchmarks/results/2026-12-01-precision-first-measurements.md).
JEMALLOC_CONF = RUN_CPU_JEMALLOC_CONF + ",dirty_decay_ms:-1,muzzy_decay_ms:-1"
# glibc's malloc settings read from the environment (mallopt(3)): an inherited one would change
# what a cell's allocator is, so every cell's environment drops them.
GLIBC_MALLOC_ENV = (
    *("MALLOC_ARENA_MAX", "MALLOC_ARENA_TEST", "MALLOC_CHECK_", "MALLOC_MMAP_MAX_"),
    *("MALLOC_MMAP_THRESHOLD_", "MALLOC_PERTURB_", "MALLOC_TOP_PAD_", "MALLOC_TRIM_THRESHOLD_"),
)
# glibc kept from giving memory back: no allocation served by mmap (so none unmapped when freed)
# and the heap's top trimmed only beyond 16 GiB. With glibc's defaults an eager ResNet-50 step
# re-faulted 8,000 - 28,000 pages at batch 4 and ~330,000 at batch 16, as many as the process's
# state says; with these none (benchmarks/results/2026-12-04-2152-glibc-tuned-allocator-runs.md).
GLIBC_TUNED_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "17179869184"}
# glibc's defaults serve a malloc this large with mmap (threshold 128 KiB, raised by frees up to
# 32 MiB at most); under GLIBC_TUNED_ENV it comes from the heap.
HEAP_PROBE_BYTES = 48 << 20
# The allocator's part of a cell's environment: recorded, and written into its command line.
ENV_KEYS = ("LD_PRELOAD", "MALLOC_CONF", *GLIBC_MALLOC_ENV)


def settings_text(env: Mapping[str, str]) -> str:
    """An allocator's settings as a shell reads them: ``NAME=value`` but the preload."""
    return " ".join(f"{k}={v}" for k, v in env.items() if k != "LD_PRELOAD")


@dataclass(frozen=True)
class Allocator:
    name: str
    description: str
    sonames: tuple[str, ...] = ()  # preferred first; () = nothing to preload (glibc)
    package: str | None = None  # the Debian/Ubuntu package that ships it
    env: Mapping[str, str] = field(default_factory=dict)  # set in the child besides LD_PRELOAD
    maps_key: str | None = None  # substring of its file name in /proc/self/maps
    heap_probe: int = 0  # bytes a malloc must take from the heap (0: none): proves env took
    label: str = ""
    color: str | None = None

    @property
    def preloaded(self) -> bool:
        return bool(self.sonames)

    @property
    def legend(self) -> str:
        return self.label or self.name


ALLOCATORS: dict[str, Allocator] = by_name(
    Allocator(
        "default",
        "glibc malloc (ptmalloc2), nothing preloaded",
        label="glibc",
        color="#0173b2",
    ),
    Allocator(
        "glibc_tuned",
        "glibc malloc kept from giving memory back, nothing preloaded: "
        + settings_text(GLIBC_TUNED_ENV),
        env=GLIBC_TUNED_ENV,
        heap_probe=HEAP_PROBE_BYTES,
        label="glibc, tuned",
        color="#56b4e9",
    ),
    Allocator(
        "jemalloc",
        f"jemalloc preloaded, MALLOC_CONF={JEMALLOC_CONF}",
        sonames=("libjemalloc.so.2",),
        package="libjemalloc2",
        env={"MALLOC_CONF": JEMALLOC_CONF},
        maps_key="libjemalloc",
        label="jemalloc",
        color="#d55e00",
    ),
    Allocator(
        "tcmalloc",
        "gperftools tcmalloc (minimal) preloaded",
        sonames=("libtcmalloc_minimal.so.4", "libtcmalloc.so.4"),
        package="libtcmalloc-minimal4",
        maps_key="libtcmalloc",
        label="tcmalloc",
        color="#029e73",
    ),
)
# Every allocator library the verification recognises (a default cell must map none of them).
FOREIGN_KEYS = ("libjemalloc", "libtcmalloc", "libmimalloc", "libhoard")
# glibc's malloc as it comes: PackRat's allocator, and what a result or table that predates the
# allocator axis ran with (``grid.AXES``' default)
GLIBC = "default"


def get(name: str) -> Allocator:
    try:
        return ALLOCATORS[name]
    except KeyError:
        raise KeyError(f"unknown allocator {name!r}; allowed: {', '.join(ALLOCATORS)}") from None


def order(name: str) -> tuple:
    """Sort key: registry order, unknown names last (by name)."""
    known = list(ALLOCATORS)
    return (known.index(name) if name in known else len(known), name)


def baseline(names: Iterable) -> str:
    """The allocator a run is compared from (the one-allocator figures, packing): glibc as it
    comes where the run has it, else the first of ``names`` in registry order; ``GLIBC`` for
    none (a table that predates the axis)."""
    got = {str(n) for n in names if n is not None and n == n}
    return GLIBC if not got or GLIBC in got else min(got, key=order)


def parse_ldconfig(text: str) -> dict[str, str]:
    """``{soname: path}`` of the 64-bit x86 libraries in ``ldconfig -p`` output, e.g. the line
    ``\tlibjemalloc.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libjemalloc.so.2``."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        left, sep, path = line.partition("=>")
        if not sep:
            continue
        name, _, attrs = left.strip().partition(" ")
        if "x86-64" in attrs and name not in out:
            out[name] = path.strip()
    return out


def find_library(
    alloc: Allocator,
    ldconfig: Mapping[str, str] | None = None,
    dirs=STANDARD_DIRS,
    exists: Callable[[str], bool] = os.path.exists,
) -> str | None:
    """The path to preload for ``alloc``: its first soname in ldconfig, else in ``dirs``."""
    ldconfig = ldconfig or {}
    for soname in alloc.sonames:
        if soname in ldconfig and exists(ldconfig[soname]):
            return ldconfig[soname]
        for d in dirs:
            path = os.path.join(d, soname)
            if exists(path):
                return path
    return None


def ldconfig_text() -> str:
    for exe in ("ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"):
        try:
            return subprocess.run(
                [exe, "-p"], capture_output=True, text=True, timeout=10, check=False
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
    return ""


def locate(alloc: Allocator) -> str | None:
    """``find_library`` on this machine."""
    if not alloc.preloaded:
        return None
    return find_library(alloc, parse_ldconfig(ldconfig_text()))


def skip_reason(alloc: Allocator, path: str | None) -> str | None:
    """Why cells with ``alloc`` cannot run here (None: they can), given ``locate``'s answer."""
    if not alloc.preloaded or path:
        return None
    return (
        f"allocator {alloc.name}: {' or '.join(alloc.sonames)} not found (ldconfig -p, "
        f"{', '.join(STANDARD_DIRS[:2])}); install it with {INSTALL_SCRIPT} "
        f"(apt-get install {alloc.package})"
    )


def _foreign(entry: str) -> bool:
    base = os.path.basename(entry)
    return any(key in base for key in FOREIGN_KEYS)


def child_env(alloc: Allocator, path: str | None, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of a pinned child running with ``alloc``: ``environ`` without inherited
    allocator preloads and glibc malloc settings, ``path`` preloaded first, ``alloc.env`` set."""
    if alloc.preloaded and not path:
        raise ValueError(f"allocator {alloc.name} has no library to preload")
    env = dict(environ)
    kept = [p for p in env.get("LD_PRELOAD", "").replace(" ", ":").split(":") if p]
    kept = [p for p in kept if not _foreign(p)]
    preload = ([path] if alloc.preloaded else []) + kept
    if preload:
        env["LD_PRELOAD"] = ":".join(preload)
    else:
        env.pop("LD_PRELOAD", None)
    if not alloc.preloaded:
        env.pop("MALLOC_CONF", None)
    for key in GLIBC_MALLOC_ENV:
        env.pop(key, None)
    # GLIBC_TUNABLES is ``name=value`` joined by ``:``; its glibc.malloc.* ones go too
    tunables = env.pop("GLIBC_TUNABLES", "").split(":")
    kept = [t for t in tunables if t and not t.startswith("glibc.malloc.")]
    if kept:
        env["GLIBC_TUNABLES"] = ":".join(kept)
    env.update(alloc.env)
    return env


def _mappings(maps_text: str) -> list[tuple[str, str]]:
    """(address range, path) of each named mapping in ``/proc/<pid>/maps`` text."""
    rows = [line.split(None, 5) for line in maps_text.splitlines()]
    return [(parts[0], parts[5].strip()) for parts in rows if len(parts) == 6]


def heap_range(maps_text: str) -> tuple[int, int] | None:
    """(start, end) of the ``[heap]`` mapping in ``/proc/<pid>/maps`` text (None: no heap)."""
    for where, path in _mappings(maps_text):
        if path == "[heap]":
            start, _, end = where.partition("-")
            return int(start, 16), int(end, 16)
    return None


def probe(nbytes: int) -> tuple[int, str]:
    """(the address of a malloc of ``nbytes``, ``/proc/self/maps`` while it is held), freed
    afterwards: in the process, what glibc's settings did with a large allocation."""
    import ctypes

    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    addr = libc.malloc(nbytes)
    try:
        with open("/proc/self/maps") as f:
            return int(addr or 0), f.read()
    finally:
        libc.free(addr)


def verify(alloc: Allocator, maps_text: str, probe_address: int | None = None) -> dict:
    """Is the process running with ``alloc``? ``ok``, the libraries mapped, and on failure a
    ``cause`` (``allocator_not_loaded`` | ``foreign_allocator``) and a one-line ``message``.
    ``probe_address``: where a malloc of ``alloc.heap_probe`` bytes landed (``probe``)."""
    mapped = list(dict.fromkeys(path for _, path in _mappings(maps_text) if _foreign(path)))
    own = [p for p in mapped if alloc.maps_key and alloc.maps_key in os.path.basename(p)]
    foreign = [p for p in mapped if p not in own]
    out = {"allocator": alloc.name, "mapped": mapped, "ok": True, "cause": None, "message": None}
    if alloc.preloaded and not own:
        out.update(
            ok=False,
            cause="allocator_not_loaded",
            message=f"{alloc.name} was to be preloaded but no {alloc.maps_key} library is "
            "mapped in /proc/self/maps (LD_PRELOAD did not take effect)",
        )
    elif foreign:
        out.update(
            ok=False,
            cause="foreign_allocator",
            message=f"cell labelled {alloc.name} has {', '.join(foreign)} mapped",
        )
    elif alloc.heap_probe and probe_address is not None:
        heap = heap_range(maps_text)
        in_heap = heap is not None and heap[0] <= probe_address < heap[1]
        out["heap_probe"] = {"bytes": alloc.heap_probe, "in_heap": in_heap}
        if not in_heap:
            out.update(
                ok=False,
                cause="allocator_not_loaded",
                message=f"{alloc.name}'s settings did not take effect: a malloc of "
                f"{alloc.heap_probe >> 20} MiB came from outside [heap] (glibc's defaults map it; "
                f"{settings_text(alloc.env)} keep it in the heap)",
            )
    return out


def parse_dpkg_version(text: str) -> str | None:
    """The version from ``dpkg-query -W -f='${Version}' PKG`` output."""
    return text.strip() or None


def version(alloc: Allocator) -> str | None:
    """The installed version of ``alloc``'s package (dpkg), or of glibc for ``default``."""
    if not alloc.package:
        return glibc_version()
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", alloc.package],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_dpkg_version(out.stdout) if out.returncode == 0 else None


def glibc_version() -> str | None:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        return None
