"""plan.cpu: /proc/cpuinfo -> capabilities, on real captured cpuinfo (tests/fixtures/cpu/README.md
says where each came from)."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from numa_effects.plan import cpu

CPU = FIXTURES / "cpu"


def caps(name: str, probe: bool | None = None) -> cpu.Capabilities:
    return cpu.capabilities(cpu.read_cpuinfo(str(CPU / f"{name}.cpuinfo")), probe)


# name -> (isa, bf16 predicted from flags, int8, vector bits, nominal MHz, MHz source)
EXPECTED = {
    "amd-epyc-zen3-kvm": ("avx2", "aten_fallback", "no_vnni", 256, 2445.4, "bogomips/2 (TSC)"),
    "amd-epyc-9654-zen4": ("avx512", "native", "vnni", 256, 2396.2, "bogomips/2 (TSC)"),
    "amd-ryzen-9950x-zen5": ("avx512", "native", "vnni", 512, 4300.4, "bogomips/2 (TSC)"),
    "intel-xeon-8480-sapphirerapids": ("amx", "native", "amx", 512, 2000.0, "bogomips/2 (TSC)"),
    "intel-xeon-gold-6326-icelake": (
        "avx512",
        "onednn_emulated",
        "vnni",
        512,
        2900.0,
        "model name",
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_captured_cpu_gets_its_isa_bf16_int8_and_clock(name):
    c = caps(name)
    assert (c.isa, c.bf16, c.int8, c.vector_bits, c.nominal_mhz, c.mhz_source) == EXPECTED[name]
    assert c.bf16_source == "flags"


def test_the_fixtures_are_all_described_in_the_readme():
    readme = (CPU / "README.md").read_text()
    for f in CPU.glob("*.cpuinfo"):
        assert f"`{f.name}`" in readme, f"{f.name} has no source in tests/fixtures/cpu/README.md"


def test_parse_reads_tabs_or_spaces_and_counts_processors():
    zen3 = cpu.read_cpuinfo(str(CPU / "amd-epyc-zen3-kvm.cpuinfo"))
    assert (zen3.vendor, zen3.family, zen3.model, zen3.logical_cpus) == ("AuthenticAMD", 25, 1, 2)
    assert zen3.cpu_mhz == pytest.approx(2445.432) and "avx2" in zen3.flags
    spr = cpu.read_cpuinfo(str(CPU / "intel-xeon-8480-sapphirerapids.cpuinfo"))  # spaces
    assert spr.model_name == "Intel(R) Xeon(R) Platinum 8480+" and spr.model == 143
    assert cpu.read_cpuinfo(str(CPU / "intel-xeon-gold-6326-icelake.cpuinfo")).logical_cpus == 8


def test_flags_are_those_every_processor_has():
    text = "processor : 0\nflags : avx2 fma avx512f\n\nprocessor : 1\nflags : avx2 fma\n"
    assert cpu.parse_cpuinfo(text).flags == {"avx2", "fma"}


def test_text_without_a_processor_block_is_refused():
    with pytest.raises(cpu.CpuInfoError, match="no x86 processor block"):
        cpu.parse_cpuinfo("Features: fp asimd\nCPU implementer: 0x41\n", "arm.txt")


@pytest.mark.parametrize(
    "flags, probe, expected",
    [
        ({"avx2", "fma"}, None, ("aten_fallback", "flags")),
        ({"avx2", "fma"}, False, ("aten_fallback", "probe")),
        ({"avx2", "fma", "avx_ne_convert"}, None, ("native", "flags")),  # AVX2 bf16 (oneDNN)
        ({*cpu.AVX512_CORE}, None, ("onednn_emulated", "flags")),
        ({*cpu.AVX512_CORE}, True, ("onednn_emulated", "probe")),
        ({*cpu.AVX512_CORE, "avx512_bf16"}, True, ("native", "probe")),
        # ONEDNN_MAX_CPU_ISA=AVX2 on an AMX machine: oneDNN says no, and that wins
        ({*cpu.AVX512_CORE, "avx512_bf16", "amx_bf16"}, False, ("aten_fallback", "probe")),
    ],
)
def test_bf16_state_from_flags_and_the_onednn_probe(flags, probe, expected):
    assert cpu.bf16_state(flags, probe) == expected


def test_the_probe_overrides_the_prediction_on_a_real_cpuinfo():
    assert caps("amd-epyc-zen3-kvm", probe=True).bf16 == "onednn_emulated"
    assert caps("amd-epyc-9654-zen4", probe=False).bf16 == "aten_fallback"


@pytest.mark.parametrize(
    "flags, level",
    [
        ({"sse4_2", "avx"}, "pre_avx2"),
        ({"avx2"}, "pre_avx2"),  # no FMA: no AVX2 kernels in oneDNN
        ({"avx2", "fma"}, "avx2"),
        ({"avx2", "fma", "avx512f"}, "avx2"),  # avx512f alone is not avx512_core
        ({"avx2", "fma", *cpu.AVX512_CORE}, "avx512"),
        ({*cpu.AVX512_CORE, "amx_tile"}, "avx512"),  # a tile unit with no data type
        ({*cpu.AVX512_CORE, "amx_tile", "amx_bf16"}, "amx"),
    ],
)
def test_isa_level(flags, level):
    assert cpu.isa_level(flags) == level


def test_flop_per_cycle_per_dtype():
    # AVX2, 2 FMA units: 2 x 8 lanes x 2 = 32; bf16 without native support no faster
    zen3 = caps("amd-epyc-zen3-kvm")
    assert [zen3.flop_per_cycle(d) for d in ("float32", "bfloat16", "int8")] == [32, 32, 64]
    zen4 = caps("amd-epyc-9654-zen4")  # AVX-512 on 256-bit units; VDPBF16PS doubles
    assert [zen4.flop_per_cycle(d) for d in ("float32", "bfloat16", "int8")] == [32, 64, 128]
    spr = caps("intel-xeon-8480-sapphirerapids")
    assert [spr.flop_per_cycle(d) for d in ("float32", "bfloat16", "int8")] == [64, 1024, 2048]
    icx = caps("intel-xeon-gold-6326-icelake")  # emulated bf16 counts at the float32 rate
    assert [icx.flop_per_cycle(d) for d in ("float32", "bfloat16", "int8")] == [64, 64, 256]
    with pytest.raises(ValueError, match="float16"):
        icx.flop_per_cycle("float16")


def test_theoretical_peak_records_its_inputs():
    peak = caps("amd-epyc-zen3-kvm").theoretical_peak("float32", cores=2)
    assert peak["theoretical_gflop_per_s"] == pytest.approx(2 * 32 * 2445.4 / 1000, abs=0.1)
    assert peak["formula"] == "cores x flop_per_cycle_per_core x nominal_mhz / 1000"
    assert (peak["nominal_mhz"], peak["fma_units_assumed"], peak["vector_bits"]) == (2445.4, 2, 256)


def test_a_cpuinfo_without_clocks_has_no_theoretical_peak():
    info = cpu.parse_cpuinfo("processor : 0\nmodel name : X\nflags : avx2 fma\n")
    c = cpu.capabilities(info)
    assert (c.nominal_mhz, c.mhz_source) == (None, "unknown")
    assert c.theoretical_peak("float32", 1)["theoretical_gflop_per_s"] is None


def test_capabilities_record_only_the_flags_that_matter():
    c = caps("intel-xeon-8480-sapphirerapids")
    assert set(c.flags) <= set(cpu.FLAGS_OF_INTEREST) and "amx_bf16" in c.flags
    assert c.to_dict()["isa"] == "amx" and c.bf16 == cpu.NATIVE


def test_this_machine_parses():
    c = cpu.of_machine()
    assert c.isa in ("amx", "avx512", "avx2", "pre_avx2") and c.bf16 in cpu.BF16_STATES
