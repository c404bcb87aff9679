"""plan.allocators: the registry, finding a library, the child's LD_PRELOAD environment, and the
proof from /proc/self/maps. Unit tests run on text captured on this machine
(tests/fixtures/allocators/: ``ldconfig -p`` lines and the maps of ``python3`` started with each
allocator preloaded, and with a preload path that does not exist); the integration test preloads
the real libraries into a real child."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO

from numa_effects.plan import allocators as al

ALLOC = FIXTURES / "allocators"
JE, TC, GLIBC = al.ALLOCATORS["jemalloc"], al.ALLOCATORS["tcmalloc"], al.ALLOCATORS["default"]
TUNED = al.ALLOCATORS["glibc_tuned"]


def maps(name: str) -> str:
    return (ALLOC / f"python-{name}.maps").read_text()


def test_the_registry_names_glibc_twice_jemalloc_tcmalloc_with_their_packages():
    assert list(al.ALLOCATORS) == ["default", "glibc_tuned", "jemalloc", "tcmalloc"]
    assert (JE.package, TC.package, GLIBC.package) == ("libjemalloc2", "libtcmalloc-minimal4", None)
    assert not GLIBC.preloaded and not TUNED.preloaded and JE.preloaded and TC.preloaded
    assert JE.env["MALLOC_CONF"].startswith(al.RUN_CPU_JEMALLOC_CONF)
    # glibc tuned: only glibc's own variables, and a probe larger than glibc's largest mmap
    # threshold (32 MiB on 64 bits, mallopt(3)), so glibc's defaults always map it
    assert set(TUNED.env) <= set(al.GLIBC_MALLOC_ENV) and TUNED.env["MALLOC_MMAP_MAX_"] == "0"
    assert TUNED.heap_probe > 32 << 20 and not GLIBC.heap_probe and not JE.heap_probe
    assert set(al.GLIBC_MALLOC_ENV) <= set(al.ENV_KEYS)
    with pytest.raises(KeyError, match="allowed: default, glibc_tuned, jemalloc, tcmalloc"):
        al.get("mimalloc")


def test_run_cpus_jemalloc_conf_is_the_one_in_this_torch():
    """The constant quotes torch.backends.xeon.run_cpu; fail if the installed torch differs."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torch not installed")
    src = os.path.join(spec.submodule_search_locations[0], "backends", "xeon", "run_cpu.py")
    assert f'"{al.RUN_CPU_JEMALLOC_CONF}"' in Path(src).read_text()


def test_ldconfig_output_gives_the_64_bit_paths():
    found = al.parse_ldconfig((ALLOC / "ldconfig-p.txt").read_text())
    assert found["libjemalloc.so.2"] == "/lib/x86_64-linux-gnu/libjemalloc.so.2"
    assert found["libtcmalloc_minimal.so.4"].endswith("libtcmalloc_minimal.so.4")
    text = "\tlibjemalloc.so.2 (libc6) => /usr/lib32/libjemalloc.so.2\n"  # a 32-bit library
    assert al.parse_ldconfig(text) == {}


def test_a_library_is_found_through_ldconfig_then_the_standard_folders():
    ld = al.parse_ldconfig((ALLOC / "ldconfig-p.txt").read_text())
    assert al.find_library(JE, ld, exists=lambda p: True) == ld["libjemalloc.so.2"]
    only = "/usr/local/lib/libtcmalloc.so.4"  # the full tcmalloc, found in a standard folder
    assert al.find_library(TC, {}, exists=lambda p: p == only) == only
    assert al.find_library(JE, {}, exists=lambda p: False) is None
    assert al.find_library(GLIBC, ld, exists=lambda p: True) is None


def test_a_missing_library_is_skipped_with_the_sonames_and_the_install_line():
    reason = al.skip_reason(TC, None)
    assert "allocator tcmalloc: libtcmalloc_minimal.so.4 or libtcmalloc.so.4 not found" in reason
    assert "tools/install-system-deps --allocators (apt-get install libtcmalloc-minimal4)" in reason
    assert al.skip_reason(TC, "/x/libtcmalloc_minimal.so.4") is None
    assert al.skip_reason(GLIBC, None) is None


def test_the_child_env_puts_the_library_first_and_sets_malloc_conf():
    env = al.child_env(JE, "/l/libjemalloc.so.2", {"PATH": "/bin", "LD_PRELOAD": "/x/libfoo.so"})
    assert env["LD_PRELOAD"] == "/l/libjemalloc.so.2:/x/libfoo.so"
    assert env["MALLOC_CONF"] == al.JEMALLOC_CONF and env["PATH"] == "/bin"
    env = al.child_env(TC, "/l/libtcmalloc_minimal.so.4", {"MALLOC_CONF": "junk"})
    assert env["LD_PRELOAD"] == "/l/libtcmalloc_minimal.so.4" and env["MALLOC_CONF"] == "junk"


def test_an_inherited_allocator_preload_is_removed():
    inherited = {"LD_PRELOAD": "/u/libtcmalloc.so.4 /x/libfoo.so", "MALLOC_CONF": "a:1"}
    env = al.child_env(GLIBC, None, inherited)
    assert env["LD_PRELOAD"] == "/x/libfoo.so" and "MALLOC_CONF" not in env
    env = al.child_env(JE, "/l/libjemalloc.so.2", {"LD_PRELOAD": "/u/libtcmalloc.so.4"})
    assert env["LD_PRELOAD"] == "/l/libjemalloc.so.2"
    assert "LD_PRELOAD" not in al.child_env(GLIBC, None, {"LD_PRELOAD": "/u/libjemalloc.so.2"})
    with pytest.raises(ValueError, match="no library"):
        al.child_env(JE, None, {})


def test_inherited_glibc_malloc_settings_are_removed_and_glibc_tuned_sets_its_own():
    inherited = {
        "PATH": "/bin",
        "MALLOC_ARENA_MAX": "2",
        "MALLOC_MMAP_THRESHOLD_": "65536",
        "GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1:glibc.cpu.hwcaps=-AVX512F",
    }
    for alloc, path in ((GLIBC, None), (JE, "/l/libjemalloc.so.2"), (TUNED, None)):
        env = al.child_env(alloc, path, inherited)
        assert "MALLOC_ARENA_MAX" not in env and env["PATH"] == "/bin"
        assert env["GLIBC_TUNABLES"] == "glibc.cpu.hwcaps=-AVX512F"  # not a malloc setting
        glibc_settings = {k: env[k] for k in al.GLIBC_MALLOC_ENV if k in env}
        assert glibc_settings == (dict(TUNED.env) if alloc is TUNED else {})
    env = al.child_env(TUNED, None, {"GLIBC_TUNABLES": "glibc.malloc.mmap_max=9"})
    assert "GLIBC_TUNABLES" not in env and env["MALLOC_MMAP_MAX_"] == "0"
    assert "LD_PRELOAD" not in env and "MALLOC_CONF" not in env


def test_glibc_tuned_is_proven_by_where_a_large_malloc_landed():
    """The probe's address against the [heap] line of a real process's maps (python-default:
    55e257112000-55e2572a1000): inside, glibc kept the allocation in its heap; outside (an
    mmap, what glibc's defaults do with 48 MiB), the settings did not take effect."""
    text = maps("default")
    assert al.heap_range(text) == (0x55E257112000, 0x55E2572A1000)
    got = al.verify(TUNED, text, 0x55E257200010)
    assert got["ok"] and got["heap_probe"] == {"bytes": TUNED.heap_probe, "in_heap": True}
    got = al.verify(TUNED, text, 0x7F0000000010)
    assert (got["ok"], got["cause"]) == (False, "allocator_not_loaded")
    assert "did not take effect" in got["message"] and "MALLOC_MMAP_MAX_=0" in got["message"]
    assert al.verify(TUNED, maps("tcmalloc"), 0x55E257200010)["cause"] == "foreign_allocator"
    assert al.heap_range("7f00-7f10 r-xp 0 00:00 0 /lib/libc.so.6\n") is None
    assert not al.verify(TUNED, "", 0x55E257200010)["ok"]  # no heap at all: not proven
    assert "heap_probe" not in al.verify(GLIBC, text, 0x7F0000000010)  # default: no claim


@pytest.mark.parametrize("name, alloc", [("jemalloc", JE), ("tcmalloc", TC), ("default", GLIBC)])
def test_a_preload_that_took_effect_verifies(name, alloc):
    got = al.verify(alloc, maps(name))
    assert got["ok"] and got["cause"] is None
    assert len(got["mapped"]) == (0 if name == "default" else 1)


def test_a_preload_that_did_not_take_effect_fails_verification():
    # LD_PRELOAD=/nonexistent/libjemalloc.so.2: ld.so ignores it with a warning (bad-path.stderr)
    got = al.verify(JE, maps("jemalloc-bad-path"))
    assert not got["ok"] and got["cause"] == "allocator_not_loaded" and got["mapped"] == []
    assert "did not take effect" in got["message"]


def test_another_allocator_under_a_label_fails_verification():
    got = al.verify(GLIBC, maps("tcmalloc"))
    assert (got["ok"], got["cause"]) == (False, "foreign_allocator")
    assert "libtcmalloc_minimal.so.4" in got["message"]
    assert al.verify(JE, maps("tcmalloc"))["cause"] == "allocator_not_loaded"


def test_versions():
    assert al.parse_dpkg_version("5.3.0-1\n") == "5.3.0-1" and al.parse_dpkg_version("") is None
    assert al.glibc_version().startswith("glibc ")


# -- real preloads ---------------------------------------------------------------------------
def _install_or_skip():
    """The allocator libraries, installed the way numactl is (idempotent); under CI=true a
    failed install fails the test instead of skipping it."""
    proc = subprocess.run(
        [str(REPO / "tools" / "install-system-deps"), "--allocators"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        msg = f"cannot install the allocator libraries: {proc.stderr.strip()[-500:]}"
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)


PROBE = (
    "import json, os\n"
    "from numa_effects.plan import allocators as al\n"
    "a = al.get(os.environ['ALLOC'])\n"
    "maps = (None, open('/proc/self/maps').read())\n"
    "addr, text = al.probe(a.heap_probe) if a.heap_probe else maps\n"
    "print(json.dumps(al.verify(a, text, addr)))\n"
)


@pytest.mark.integration
@pytest.mark.parametrize("name", list(al.ALLOCATORS))
def test_a_real_child_runs_with_the_preloaded_allocator(name):
    import json

    _install_or_skip()
    alloc = al.get(name)
    path = al.locate(alloc)
    assert al.skip_reason(alloc, path) is None
    env = al.child_env(alloc, path, {**os.environ, "ALLOC": name})
    env["PYTHONPATH"] = str(REPO / "workflow" / "scripts")
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    got = json.loads(out.stdout)
    assert got["ok"], got
    assert bool(got["mapped"]) == alloc.preloaded
    if alloc.preloaded:
        assert al.version(alloc)  # dpkg knows the package it came from


@pytest.mark.integration
def test_a_real_child_labelled_glibc_tuned_without_its_settings_fails_verification():
    """The probe can fail: glibc's defaults map a 48 MiB malloc, even when an inherited
    setting raised the mmap threshold as far as glibc allows (32 MiB)."""
    import json

    shell = {k: v for k, v in os.environ.items() if k not in al.GLIBC_MALLOC_ENV}
    for inherited in ({}, {"MALLOC_MMAP_THRESHOLD_": str(32 << 20)}):
        env = {**shell, **inherited, "ALLOC": "glibc_tuned"}
        env["PYTHONPATH"] = str(REPO / "workflow" / "scripts")
        out = subprocess.run(
            [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
        )
        got = json.loads(out.stdout)
        assert (got["ok"], got["cause"]) == (False, "allocator_not_loaded"), got
        assert got["heap_probe"]["in_heap"] is False


@pytest.mark.integration
def test_a_real_child_with_a_broken_preload_fails_verification(tmp_path):
    env = {**os.environ, "ALLOC": "jemalloc", "PYTHONPATH": str(REPO / "workflow" / "scripts")}
    env = al.child_env(JE, str(tmp_path / "libjemalloc.so.2"), env)  # no such file
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    assert "cannot be preloaded" in out.stderr
    assert '"cause": "allocator_not_loaded"' in out.stdout


# -- in the cell: the verification record and the cause --------------------------------------
def test_the_cells_verification_fails_with_the_allocator_causes():
    """measure.verify.check_allocator: the spec's allocator record against the process's maps;
    a failure is a problem of the cell's verification with a registered cause."""
    from numa_effects.measure import verify
    from numa_effects.measure.causes import Cause

    def ver():
        return {"ok": True, "cause": None, "problems": []}

    je = {"name": "jemalloc", "library": "/l/libjemalloc.so.2", "maps_key": "libjemalloc"}
    glibc = {"name": "default", "library": None, "maps_key": None}
    got = verify.check_allocator(ver(), je, maps("jemalloc"))
    assert got["ok"] and got["allocator"]["mapped"][0].endswith("libjemalloc.so.2")
    got = verify.check_allocator(ver(), je, maps("jemalloc-bad-path"))
    assert (got["ok"], got["cause"]) == (False, Cause.ALLOCATOR_NOT_LOADED)
    assert got["problems"][0]["check"] == "allocator"
    got = verify.check_allocator(ver(), glibc, maps("tcmalloc"))
    assert (got["ok"], got["cause"]) == (False, Cause.FOREIGN_ALLOCATOR)
    assert verify.check_allocator(ver(), glibc, maps("default"))["ok"]


def test_the_front_door_builds_the_preload_and_records_it_in_the_command_line():
    """Where the cell runs: the library found, the environment with it first in LD_PRELOAD and
    jemalloc's MALLOC_CONF, written into the recorded command line; glibc's gets neither."""
    from numa_effects.measure import job, runner

    environ = {"PATH": "/bin", "LD_PRELOAD": "/u/libtcmalloc.so.4", "MALLOC_CONF": "x:1"}
    rec, env, why = job.allocator_here("default", environ)
    assert why is None and rec["library"] is None and "LD_PRELOAD" not in env
    assert "MALLOC_CONF" not in env and rec["version"].startswith("glibc")
    line = runner.command_line(["numactl", "python"], 1, env)
    assert "LD_PRELOAD" not in line and "MALLOC_CONF" not in line
    path = al.locate(JE)
    if path is None:
        pytest.skip(al.skip_reason(JE, None))
    rec, env, why = job.allocator_here("jemalloc", environ)
    assert why is None and env["LD_PRELOAD"] == path and rec["library"] == path
    assert rec["env"] == {"LD_PRELOAD": path, "MALLOC_CONF": al.JEMALLOC_CONF}
    line = runner.command_line(["numactl", "python"], 2, env)
    assert f"LD_PRELOAD={path} MALLOC_CONF={al.JEMALLOC_CONF} " in line


def test_the_front_door_records_glibc_tuneds_settings_and_its_probe():
    """glibc tuned: no preload, its variables in the record and the command line (an inherited
    glibc setting replaced), and the probe's size for the process; default sets none of them."""
    from numa_effects.measure import job, runner
    from numa_effects.measure.record import Record
    from numa_effects.tables import cells

    environ = {"PATH": "/bin", "MALLOC_TRIM_THRESHOLD_": "0", "MALLOC_ARENA_MAX": "1"}
    rec, env, why = job.allocator_here("glibc_tuned", environ)
    assert why is None and rec["library"] is None and "LD_PRELOAD" not in env
    assert rec["env"] == TUNED.env and rec["heap_probe"] == al.HEAP_PROBE_BYTES
    assert "MALLOC_ARENA_MAX" not in env and rec["version"].startswith("glibc")
    line = runner.command_line(["numactl", "python"], 1, env)
    settings = " ".join(f"{k}={v}" for k, v in TUNED.env.items())
    assert f"{settings} PYTHONPATH=" in line
    assert cells.allocator_columns(Record("ok", {}, allocator=rec))["malloc_env"] == settings
    rec, env, _ = job.allocator_here("default", environ)
    assert rec["env"] == {} and rec["heap_probe"] == 0 and "MALLOC_" not in str(env)
    assert cells.allocator_columns(Record("ok", {}, allocator=rec))["malloc_env"] is None


def test_the_baseline_allocator_is_glibc_as_it_comes_else_the_first_in_registry_order():
    """What a run is compared from (precision.csv, the one-allocator figures, packing)."""
    assert al.baseline(["tcmalloc", "default", "glibc_tuned"]) == "default"
    assert al.baseline(["tcmalloc", "jemalloc", "glibc_tuned"]) == "glibc_tuned"
    assert al.baseline(["tcmalloc", "jemalloc"]) == "jemalloc"
    assert al.baseline(["glibc_tuned", float("nan"), None]) == "glibc_tuned"
    assert al.baseline([]) == al.GLIBC == "default"
    assert list(al.ALLOCATORS)[:2] == ["default", "glibc_tuned"]


def test_the_default_grid_measures_glibc_tuned_and_packrats_glibc_as_it_comes():
    """The schema's default and config/config.yaml say glibc tuned (docs/precision.md,
    "Allocators"); config/packrat.yaml keeps PackRat's glibc as it
    comes, and the test configs say what they run (the workflow merges config.yaml under
    them, ``grid.expand`` of the file alone does not)."""
    import yaml

    from numa_effects.config import schema

    def allocs(path):
        return yaml.safe_load(path.read_text()).get("allocators")

    assert schema.load()["properties"]["allocators"]["default"] == ["glibc_tuned"]
    assert allocs(REPO / "config" / "config.yaml") == ["glibc_tuned"]
    assert allocs(REPO / "config" / "packrat.yaml") == [al.GLIBC]
    for test_config in sorted((REPO / ".test" / "config").glob("*.yaml")):
        assert allocs(test_config) == ["glibc_tuned"], test_config.name
