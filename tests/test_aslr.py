"""Address-space layout randomization: what a cell records (``provenance.address_randomization``,
the ``aslr`` column) and the variance benchmark's run without it (``setarch -R``)."""

import subprocess
import sys

import pytest

from benchmarks import variance
from numa_effects.measure import provenance, runner

# the address libc's malloc is mapped at, and what the process says of its layout
CHILD = (
    "import ctypes; from numa_effects.measure import provenance as p; "
    "print(ctypes.cast(ctypes.CDLL(None).malloc, ctypes.c_void_p).value, "
    "p.address_randomization())"
)


def _files(tmp_path, personality, level):
    pers, sysctl = tmp_path / "personality", tmp_path / "randomize_va_space"
    if personality is not None:
        pers.write_text(personality + "\n")
    if level is not None:
        sysctl.write_text(level + "\n")
    return {"personality": str(pers), "sysctl": str(sysctl)}


@pytest.mark.parametrize(
    ("personality", "level", "expected"),
    [
        ("00000000", "2", "on"),  # the kernel's default
        ("00000000", "1", "partial"),
        ("00000000", "0", "off"),
        ("00040000", "2", "off"),  # setarch -R: ADDR_NO_RANDOMIZE
        ("00440000", "2", "off"),  # with another flag beside it (READ_IMPLIES_EXEC)
        ("00400000", "2", "on"),  # another flag alone
        (None, "2", "on"),
        ("garbage", "1", "partial"),
        (None, None, "unknown"),
        ("00000000", "7", "unknown"),
    ],
)
def test_the_layout_is_read_from_the_personality_then_the_sysctl(
    tmp_path, personality, level, expected
):
    assert provenance.address_randomization(**_files(tmp_path, personality, level)) == expected


def _child(prefix):
    out = subprocess.run(
        [*prefix, sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        check=True,
        env=runner.child_env(1),  # the cell's: numa_effects importable
    ).stdout.split()
    return int(out[0]), out[1]


def test_the_benchmarks_run_without_randomization_lays_every_process_out_the_same():
    """Real processes: under the variance benchmark's prefix every child says ``off`` and maps
    libc at the same address; without it each says what this machine does, and where that is
    ``on`` two children map libc at different addresses."""
    prefix = variance.RUNS["variance-aslr-off"]["prefix"]
    fixed = [_child(prefix) for _ in range(2)]
    assert [said for _, said in fixed] == ["off", "off"]
    assert fixed[0][0] == fixed[1][0]
    plain = [_child([]) for _ in range(2)]
    here = provenance.address_randomization()
    assert [said for _, said in plain] == [here, here]
    if here == "on":
        assert plain[0][0] != plain[1][0]
    assert provenance.binding()["aslr"] == here
