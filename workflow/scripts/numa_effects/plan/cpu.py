"""What the CPU can compute fast: /proc/cpuinfo parsed into capabilities that decide which
precisions are worth measuring and how a cell is labelled: the vector ISA level, the ``bf16``
and ``int8`` paths (docs/precision.md), and the inputs of a theoretical peak. Pure functions on
text and flag sets except ``read_cpuinfo``; whether oneDNN takes bf16 needs torch, so
``bf16_state`` takes that answer as an argument and predicts it from the flags without it.

The theoretical peak is for reference only (boost clocks exceed it; 2 FMA units per core is an
assumption, one 512-bit unit on some Xeon Silver/Bronze)::

    peak_gflop_per_s = cores x flop_per_cycle(dtype) x nominal_mhz / 1000
    flop_per_cycle(float32)  = fma_units x (vector_bits / 32) x 2
    flop_per_cycle(bfloat16) = 2 x float32 with avx512_bf16, 1024 with AMX, else float32's
    flop_per_cycle(int8)     = 4 x float32 with VNNI, 2 x without, 2048 with AMX

``vector_bits`` is 256 on AMD Zen 4's AVX-512. The nominal clock is the model name's
``@ x.xxGHz``, else bogomips / 2 (the TSC rate), else ``cpu MHz`` (a current clock).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

NATIVE, EMULATED, FALLBACK = "native", "onednn_emulated", "aten_fallback"
BF16_STATES = (NATIVE, EMULATED, FALLBACK)
NATIVE_BF16_FLAGS = ("amx_bf16", "avx512_bf16", "avx_ne_convert")
AVX512_CORE = ("avx512f", "avx512bw", "avx512vl", "avx512dq")  # oneDNN's avx512_core
VNNI_FLAGS = ("avx512_vnni", "avx_vnni")
AMX_BF16_FLOP_PER_CYCLE = 1024  # per core: 16x32 bf16 tile products, 16 cycles each
AMX_INT8_OP_PER_CYCLE = 2048
FMA_UNITS = 2
# Flags worth recording with a result (the rest of the ~150 say nothing about inference).
FLAGS_OF_INTEREST = (
    *("fma", "avx2"),
    *AVX512_CORE,
    *("avx512_vnni", "avx_vnni", "avx512_bf16", "avx_ne_convert", "avx512_fp16", "amx_tile"),
    *("amx_bf16", "amx_int8", "amx_fp16", "hypervisor"),
)
_GHZ = re.compile(r"@\s*([0-9.]+)\s*GHz", re.I)


class CpuInfoError(ValueError):
    """The text is not an x86 /proc/cpuinfo."""


@dataclass(frozen=True)
class CpuInfo:
    """The facts of /proc/cpuinfo the pipeline uses (from its first processor block; ``flags``
    are those every logical CPU has)."""

    vendor: str
    model_name: str
    family: int | None
    model: int | None
    flags: frozenset[str]
    logical_cpus: int
    cpu_mhz: float | None
    bogomips: float | None
    source: str = ""


def _blocks(text: str) -> list[dict[str, str]]:
    blocks = []
    for chunk in re.split(r"\n\s*\n", text):
        pairs = (line.partition(":") for line in chunk.splitlines())
        blocks.append({k.strip(): v.strip() for k, sep, v in pairs if sep})
    return [b for b in blocks if "processor" in b]


def _number(value: str | None, kind=float):
    try:
        return kind(value) if value not in (None, "") else None
    except ValueError:
        return None


def parse_cpuinfo(text: str, source: str = "") -> CpuInfo:
    """A ``CpuInfo`` from the text of /proc/cpuinfo (tabs or spaces before the colon)."""
    blocks = _blocks(text)
    if not blocks or "flags" not in blocks[0]:
        raise CpuInfoError(f"{source or 'text'}: no x86 processor block with flags")
    first = blocks[0]
    flags = set.intersection(*(set(b["flags"].split()) for b in blocks if "flags" in b))
    return CpuInfo(
        vendor=first.get("vendor_id", ""),
        model_name=first.get("model name", ""),
        family=_number(first.get("cpu family"), int),
        model=_number(first.get("model"), int),
        flags=frozenset(flags),
        logical_cpus=len(blocks),
        cpu_mhz=_number(first.get("cpu MHz")),
        bogomips=_number(first.get("bogomips")),
        source=source,
    )


def read_cpuinfo(path: str = "/proc/cpuinfo") -> CpuInfo:
    with open(path) as fh:
        return parse_cpuinfo(fh.read(), path)


def isa_level(flags) -> str:
    """``amx`` | ``avx512`` | ``avx2`` | ``pre_avx2``: the widest path oneDNN can take here."""
    flags = set(flags)
    avx512 = all(f in flags for f in AVX512_CORE)
    if avx512 and "amx_tile" in flags and ({"amx_bf16", "amx_int8"} & flags):
        return "amx"
    if avx512:
        return "avx512"
    if {"avx2", "fma"} <= flags:
        return "avx2"
    return "pre_avx2"


def onednn_bf16_predicted(flags) -> bool:
    """What oneDNN will answer about bf16, predicted from the flags (avx512_core up, or the AVX2
    bf16 conversions); the real probe, when available, wins."""
    flags = set(flags)
    return all(f in flags for f in AVX512_CORE) or "avx_ne_convert" in flags


def bf16_state(flags, onednn_bf16: bool | None = None) -> tuple[str, str]:
    """(state, source): the bf16 state (``BF16_STATES``) and whether oneDNN's answer was
    ``probe``-d (``onednn_bf16`` given) or predicted from the ``flags``."""
    takes = onednn_bf16_predicted(flags) if onednn_bf16 is None else bool(onednn_bf16)
    source = "flags" if onednn_bf16 is None else "probe"
    if not takes:
        return FALLBACK, source
    if any(f in set(flags) for f in NATIVE_BF16_FLAGS):
        return NATIVE, source
    return EMULATED, source


def int8_state(flags) -> str:
    """``amx`` | ``vnni`` | ``no_vnni``: how int8 dot products run (no VNNI: 2-3 instructions,
    about half the VNNI rate)."""
    flags = set(flags)
    if "amx_int8" in flags and "amx_tile" in flags:
        return "amx"
    if flags & set(VNNI_FLAGS):
        return "vnni"
    return "no_vnni"


def vector_bits(info: CpuInfo) -> int:
    flags = info.flags
    if all(f in flags for f in AVX512_CORE):
        amd_zen4 = info.vendor == "AuthenticAMD" and info.family == 25
        return 256 if amd_zen4 else 512
    if "avx2" in flags or "avx" in flags:
        return 256
    return 128


def nominal_mhz(info: CpuInfo) -> tuple[float | None, str]:
    """(MHz, source) of the nominal clock: model name, else bogomips / 2, else cpu MHz."""
    m = _GHZ.search(info.model_name)
    if m:
        return round(float(m.group(1)) * 1000, 1), "model name"
    if info.bogomips:
        return round(info.bogomips / 2, 1), "bogomips/2 (TSC)"
    if info.cpu_mhz:
        return info.cpu_mhz, "cpu MHz (current clock)"
    return None, "unknown"


@dataclass(frozen=True)
class Capabilities:
    vendor: str
    model_name: str
    family: int | None
    model: int | None
    isa: str
    bf16: str
    bf16_source: str
    int8: str
    vector_bits: int
    fma_units: int
    nominal_mhz: float | None
    mhz_source: str
    flags: tuple[str, ...] = field(default=())  # FLAGS_OF_INTEREST present

    def to_dict(self) -> dict:
        return asdict(self)

    def flop_per_cycle(self, dtype: str) -> int:
        """FLOPs (int8: integer ops) one core can issue per cycle in ``dtype``."""
        fp32 = self.fma_units * (self.vector_bits // 32) * 2
        flags = set(self.flags)
        if dtype == "float32":
            return fp32
        if dtype == "bfloat16":
            if "amx_bf16" in flags and self.bf16 == NATIVE:
                return AMX_BF16_FLOP_PER_CYCLE
            return 2 * fp32 if "avx512_bf16" in flags and self.bf16 == NATIVE else fp32
        if dtype == "int8":
            if self.int8 == "amx":
                return AMX_INT8_OP_PER_CYCLE
            return 4 * fp32 if self.int8 == "vnni" else 2 * fp32
        raise ValueError(f"no peak model for dtype {dtype!r}")

    def theoretical_peak(self, dtype: str, cores: int) -> dict:
        """The reference peak of ``cores`` physical cores in ``dtype``, with every input."""
        per_cycle = self.flop_per_cycle(dtype)
        gflops = None if not self.nominal_mhz else cores * per_cycle * self.nominal_mhz / 1000
        return {
            "dtype": dtype,
            "theoretical_gflop_per_s": None if gflops is None else round(gflops, 1),
            "cores": int(cores),
            "flop_per_cycle_per_core": per_cycle,
            "nominal_mhz": self.nominal_mhz,
            "mhz_source": self.mhz_source,
            "vector_bits": self.vector_bits,
            "fma_units_assumed": self.fma_units,
            "isa": self.isa,
            "formula": "cores x flop_per_cycle_per_core x nominal_mhz / 1000",
        }


def capabilities(info: CpuInfo, onednn_bf16: bool | None = None) -> Capabilities:
    """The capabilities of a parsed cpuinfo (``onednn_bf16``: the oneDNN probe's answer)."""
    bf16, bf16_source = bf16_state(info.flags, onednn_bf16)
    mhz, mhz_source = nominal_mhz(info)
    return Capabilities(
        vendor=info.vendor,
        model_name=info.model_name,
        family=info.family,
        model=info.model,
        isa=isa_level(info.flags),
        bf16=bf16,
        bf16_source=bf16_source,
        int8=int8_state(info.flags),
        vector_bits=vector_bits(info),
        fma_units=FMA_UNITS,
        nominal_mhz=mhz,
        mhz_source=mhz_source,
        flags=tuple(f for f in FLAGS_OF_INTEREST if f in info.flags),
    )


def of_machine(path: str = "/proc/cpuinfo", onednn_bf16: bool | None = None) -> Capabilities:
    return capabilities(read_cpuinfo(path), onednn_bf16)
