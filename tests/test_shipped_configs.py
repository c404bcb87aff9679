"""The README's two commands in one checkout: after `make run` has made a default results/,
every shipped config and every results folder a documented command names is still accepted (a
run's outputs go beside another run's results folder, never inside it, which the config check
refuses). The check looks at paths only, so a folder shaped like a default run's stands in."""

import re

import pytest
from conftest import FIXTURES, REPO

from numa_effects.config import check, files, paths
from numa_effects.plan import paths as results_paths

CONFIGS = sorted((REPO / "config").glob("*.yaml"))
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# `--config ... results=X`, `--results X` (import-packrat), `RESULTS=X` (make retry-failed)
RESULTS = re.compile(r"(?:\bresults=|--results |\bRESULTS=)([^\s'\"\\]+)")


@pytest.fixture
def after_make_run(tmp_path):
    """A working directory whose results/ is a default run's, as the results check sees it."""
    results = tmp_path / "results"
    (results / "cells").mkdir(parents=True)
    (results / results_paths.MACHINE).write_text("{}")
    assert results_paths.holds_results(results)
    return tmp_path


def documented_results() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for block in re.findall(r"```(?:sh|bash|shell)\n(.*?)```", page.read_text(), re.S):
            found += [(page.name, m) for m in RESULTS.findall(block) if "<" not in m]
    return found


def test_the_manual_names_results_folders():
    folders = {f for _, f in documented_results()}
    assert {"runs/packrat-cloudlab", "runs/glibc", "runs/a/results"} <= folders


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_a_shipped_config_is_accepted_beside_a_default_run(config, after_make_run, monkeypatch):
    monkeypatch.chdir(after_make_run)
    cfg = files.load([REPO / "config" / "config.yaml", config])
    cfg["topology"] = str(FIXTURES / "topology" / "synthetic-2x32-smt-offset64.lscpu-p.txt")
    check(cfg, workdir=after_make_run, workflow_dir=REPO)  # raises ConfigError with the lines


@pytest.mark.parametrize(("page", "folder"), documented_results())
def test_a_documented_results_folder_is_accepted_beside_a_default_run(page, folder, after_make_run):
    assert paths.results_problems(folder, after_make_run, REPO) == [], page


def test_the_check_refuses_a_folder_inside_a_default_run(after_make_run):
    # the property the two tests above rely on: the stand-in is seen as a run's results
    (problem,) = paths.results_problems("results/precision", after_make_run, REPO)
    assert "inside the results folder" in problem.text
