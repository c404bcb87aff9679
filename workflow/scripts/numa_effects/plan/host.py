"""What the planning machine offers the grid beyond its topology: the optimizations'
requirements, the CPU's capabilities (is bf16 native?) and the allocator libraries.
``grid.expand`` skips the cells this machine cannot run, or (``bf16: auto``) should not, with
the reason; it takes a ``Host`` so that it stays pure, and ``current()`` reads the machine (no
torch import: the workflow calls it at parse time). Every check is repeated where the cell runs
(``measure.job``), so a grid planned on one machine and run on another is never mislabelled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from numa_effects.plan import allocators as allocators_mod
from numa_effects.plan import cpu as cpu_mod
from numa_effects.plan import optimizations as optimizations_mod

# Config key ``bf16``: ``auto`` skips a bf16 optimization where bf16 is not native, ``always``
# measures it, marked.
BF16_AUTO, BF16_ALWAYS = "auto", "always"


@dataclass(frozen=True)
class Host:
    """The facts ``grid.expand`` checks cells against (None: not checked, everything runs)."""

    available: Mapping[str, bool] | None = None  # optimizations.availability()
    capabilities: cpu_mod.Capabilities | None = None  # cpu.of_machine() (flags only)
    libraries: Mapping[str, str | None] = field(default_factory=dict)  # allocator -> path

    def optimization_reason(self, opt: str, bf16: str = BF16_AUTO) -> str | None:
        """Why ``opt``'s cells are skipped here (None: they run): a requirement is missing, or
        under ``bf16: auto`` it computes in bf16 and this CPU has no native bf16 (emulated or
        reference kernels, slower than float32). int8 without VNNI/AMX still runs oneDNN's
        integer kernels and is always measured (marked)."""
        entry, caps = optimizations_mod.OPTIMIZATIONS.get(opt), self.capabilities
        if entry is None:
            return None
        if self.available is not None:
            why = optimizations_mod.skip_reason(entry, self.available)
            if why:
                return why
        if caps is None or bf16 == BF16_ALWAYS or entry.native != "bf16":
            return None
        note = optimizations_mod.precision_note(entry, caps)  # None where bf16 is native
        if note is None:
            return None
        return (
            f"{note} ({caps.model_name or caps.isa}; plan.cpu from its flags); skipped under "
            "bf16: auto, set bf16: always to measure it anyway"
        )

    def allocator_reason(self, name: str) -> str | None:
        alloc = allocators_mod.ALLOCATORS.get(name)
        if alloc is None or not alloc.preloaded or name not in self.libraries:
            return None
        return allocators_mod.skip_reason(alloc, self.libraries[name])


def current(allocators: Iterable[str] = (), cpuinfo: str = "/proc/cpuinfo") -> Host:
    """This machine's facts for the allocators named (only those are looked up)."""
    try:
        caps = cpu_mod.of_machine(cpuinfo)
    except (OSError, cpu_mod.CpuInfoError):
        caps = None  # not x86 Linux: no capability rule, the cells record what they find
    libraries = {}
    for name in dict.fromkeys(allocators):
        alloc = allocators_mod.ALLOCATORS.get(name)
        if alloc is not None and alloc.preloaded:
            libraries[name] = allocators_mod.locate(alloc)
    return Host(available=optimizations_mod.availability(), capabilities=caps, libraries=libraries)
