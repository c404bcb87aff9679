"""Failure causes have one source, numa_effects.measure.causes: the docs table is generated from it
and
the code that classifies failures names its causes from it (no free-form cause strings)."""

import re
from pathlib import Path

from numa_effects.measure import causes, supervise

REPO = Path(__file__).resolve().parents[1]
PKG = REPO / "workflow" / "scripts" / "numa_effects" / "measure"


def test_docs_table_is_the_registry():
    doc = (REPO / "docs" / "troubleshooting.md").read_text()
    block = re.search(re.escape(causes.BEGIN) + r"\n(.*?)\n" + re.escape(causes.END), doc, re.S)
    assert block, "docs/troubleshooting.md has no failure-causes block"
    assert block.group(1) == causes.markdown(), (
        "docs/troubleshooting.md failure causes are stale: regenerate with "
        "PYTHONPATH=workflow/scripts python -m numa_effects.measure.causes"
    )


def test_every_cause_has_a_meaning():
    assert set(causes.MEANING) == set(causes.Cause)
    assert all(len(m) > 20 for m in causes.MEANING.values())


def test_classifiers_use_the_registry_not_strings():
    """Every measuring module (supervise, the front door, the runner, verify, the instance, the
    workloads) names causes as ``Cause`` members; a quoted cause value there would be a cause
    the registry (and the docs) may not know."""
    hyphenated = "|".join(re.escape(c.value) for c in causes.Cause if "-" in c.value)
    any_value = "|".join(re.escape(c.value) for c in causes.Cause)
    quoted = re.compile(rf"""["']({hyphenated})["']""")
    returned = re.compile(rf"""return ["']({any_value})["'],""")  # classify's (cause, message)
    modules = sorted(p for p in PKG.rglob("*.py") if p.name != "causes.py")
    assert {"job.py", "runner.py", "cell.py", "model.py"} <= {p.name for p in modules}
    for path in modules:
        src = re.sub(r'"""(.*?)"""', "", path.read_text(), flags=re.S)  # docstrings may name them
        assert not quoted.findall(src) + returned.findall(src), f"{path.name} spells a cause"
    used = set(re.findall(r"Cause\.([A-Z_]+)", (PKG / "supervise.py").read_text()))
    assert used <= {c.name for c in causes.Cause}


def test_classify_returns_registered_causes():
    timed_out = supervise.Outcome(returncode=-9, timed_out=True)
    cause, _ = supervise.classify(timed_out, "", 10.0)
    assert cause is causes.Cause.TIMEOUT and cause == "timeout"
    crashed = supervise.Outcome(returncode=1)
    cause, msg = supervise.classify(crashed, "Traceback\nValueError: boom\n", 10.0)
    assert cause in causes.MEANING and (cause, msg) == ("error", "ValueError: boom")
