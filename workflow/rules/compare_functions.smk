# Functions of the comparison's rules (workflow/rules/compare.smk): the configured comparison, or
# one line and exit 1 when a target asks for one the config does not name.
import sys


def compare_settings(wildcards=None):
    """The resolved compare key; without it (or for another name) one line and exit 1."""
    if not PLAN.compare:
        print(
            "invalid configuration: the compare target needs config key 'compare', the result "
            "folders to compare, baseline first; e.g. --config compare='[runs/a/results, "
            "runs/b/results]' (docs/comparing.md)",
            file=sys.stderr,
        )
        raise SystemExit(1)
    name = getattr(wildcards, "compare", None) if wildcards is not None else None
    if name is not None and name != PLAN.compare["name"]:
        print(
            f"invalid configuration: {PLAN.compare_path(paths.COMPARE_DIR, name)} is not the "
            f"configured comparison ({PLAN.compare['name']}: config key 'compare')",
            file=sys.stderr,
        )
        raise SystemExit(1)
    return PLAN.compare


def compare_targets(wildcards):
    compare_settings()
    return PLAN.compare_targets()


def compare_tables_input(wildcards):
    compare_settings(wildcards)
    return PLAN.compare_inputs()


def compare_page_input(wildcards):
    name = compare_settings(wildcards)["name"]
    return {
        **{t: PLAN.compare_table(t, name) for t in paths.COMPARE_TABLES},
        "figures": compare_figure_targets(name),
    }
