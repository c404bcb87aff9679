"""Shared test helpers: the repository root and a real `snakemake` runner for integration tests."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"

# A grid small enough for a real run in ~30 s on 2 cores: resnet18 on 32x32 images.
TINY_CONFIG = {
    "models": ["resnet18"],
    "batch_sizes": [1, 2],
    "optimizations": ["none", "script"],
    "threads": [1],
    "placements": ["sequential"],
    "image_size": 32,
    "warmup": 1,
    "min_iterations": 3,
    "max_iterations": 5,
    "max_seconds_per_cell": 1,
    "replicates": 1,  # config/config.yaml runs more; tests that need replicates say so
    "contended_retries": 0,  # a busy test machine must not add back-offs (unit-tested)
}


def snakemake(
    workdir: Path, config: dict | None, *args: str, check: bool = True, timeout: float = 900
) -> subprocess.CompletedProcess:
    """Run the real workflow with `config` written to workdir/config.yaml, outputs in workdir."""
    workdir.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
    ]
    if config is not None:
        cfg = workdir / "config.yaml"
        cfg.write_text(yaml.safe_dump(config))
        cmd += ["--configfile", str(cfg)]
    cmd += list(args)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(
        cmd, cwd=workdir, capture_output=True, text=True, env=env, timeout=timeout
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake failed ({proc.returncode}): {' '.join(cmd)}\n"
            f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
        )
    return proc


def jobs_planned(proc: subprocess.CompletedProcess) -> dict[str, int]:
    """Parse the 'Job stats' table of a snakemake run into {rule: count} ({} if nothing to do)."""
    counts: dict[str, int] = {}
    lines = (proc.stdout + proc.stderr).splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("Job stats:"):
            for row in lines[i + 3 :]:
                parts = row.split()
                if len(parts) != 2 or not parts[1].isdigit():
                    break
                counts[parts[0]] = int(parts[1])
            break
    counts.pop("total", None)
    return counts


DOT_NODE = re.compile(r'^\s*\d+\[label = "([^"\\]+)[^"]*",.*style="([^"]*)"\];$', re.M)


def dag_jobs(dot: str) -> Counter:
    """{rule: jobs to run} from Snakemake's ``--dag`` output (Graphviz): every job of the DAG
    is a node, and those that need not run are drawn ``dashed``. Empty when nothing would
    run; a text without a graph is an error, never "nothing to do"."""
    if "digraph snakemake_dag" not in dot:
        raise AssertionError(f"no DAG in snakemake's output:\n{dot[-2000:]}")
    return Counter(rule for rule, style in DOT_NODE.findall(dot) if "dashed" not in style)


@pytest.fixture
def tiny_config() -> dict:
    return dict(TINY_CONFIG)
