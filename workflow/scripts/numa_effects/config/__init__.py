"""Config validation before any job starts, with messages a user can act on.

``check_or_exit(config, ...)`` is called by ``workflow/rules/common.smk`` while Snakemake parses
the workflow (so ``snakemake -n`` fails the same way as a real run, before any job). It

1. fills schema defaults for missing keys (as ``snakemake.utils.validate`` would);
2. normalises every value to its schema type, for every key alike (``coerce``): digit strings
   (``--config batch_sizes='[1,8]'`` reaches the workflow as ``['1', '8']``: Snakemake parses
   list values with YAML's BaseLoader), integral floats (``1000.0``, ``0.0``: checked, planned
   and recorded as ``1000``, ``0``), ``true``/``false`` strings for booleans, ``null``/``none``/
   ``~`` for nullable keys; ``results`` is spelled one way (``./results/`` -> ``results``);
3. validates against ``workflow/schemas/config.schema.yaml`` with jsonschema and turns every
   error into one line naming the full key path:
   ``config key 'batch_sizes[1]': 0 is out of range; allowed: an integer >= 1 and <= 65536``;
4. checks what the schema cannot: finite numbers, model names (against the checked-in
   torchvision list in ``models``), optimizations and placements against their registries,
   ``min_iterations`` <= ``max_iterations``, the ``results`` folder (not a system folder, not
   the workflow's own, not a file), the ``import.packrat`` sources, the ``topology`` file, and
   thread counts no placement could ever run on the planning machine (counts above one node's
   cores are fine: those cells are skipped).

All problems are reported at once, as a ``ConfigError`` (a ``ValueError``); ``check_or_exit``
prints them and exits with status 1 (no traceback, in Snakemake or here). Nothing here imports
torch. ``python -m numa_effects.config FILE... [--config KEY=VALUE...]`` checks a config the
same way outside Snakemake and, unlike Snakemake, says where a YAML syntax error is;
``--list models`` prints every allowed model name.
"""

from __future__ import annotations

import copy
import difflib
import math
import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from numa_effects.plan import placement as placement_mod
from numa_effects.plan import topology as topology_mod
from numa_effects.plan.models import CLASSIFICATION_MODELS
from numa_effects.plan.optimizations import OPTIMIZATIONS

SCHEMA_PATH = Path(__file__).resolve().parents[3] / "schemas" / "config.schema.yaml"
NULL_STRINGS = {"null", "none", "~", ""}

# Human words for the schema's patterns (the schema keeps the regex, users get the words).
PATTERN_WORDS = {
    "^[a-z][a-z0-9_]*$": ("a name", "names", "of lower-case letters, digits and '_'"),
    "^[A-Za-z0-9_./-]+$": (
        "a path",
        "paths",
        "of letters, digits and _ . / - only (no spaces, quotes or shell metacharacters)",
    ),
}
# Keys whose values are checked against a registry (models, optimizations, placements): their
# schema enum/pattern errors are left to that check, which lists the registry as allowed values.
NAME_KEYS = ("models", "optimizations", "placements")


class ConfigError(ValueError):
    """The config cannot be run; ``problems`` holds one line per problem."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        n = len(problems)
        where = "every key is described in config/README.md"
        if n == 1:
            text = f"invalid configuration: {problems[0]} ({where})"
        else:
            text = "\n".join(
                [f"invalid configuration ({n} problems; {where}):", *(f"  - {p}" for p in problems)]
            )
        super().__init__(text)


# -- schema --------------------------------------------------------------------------------------
def load_schema(path: str | Path = SCHEMA_PATH) -> dict:
    import yaml

    with open(path) as fh:
        return yaml.safe_load(fh)


def _type_of(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _bounds(schema: dict) -> str:
    parts = []
    for key, op in (
        ("minimum", ">="),
        ("exclusiveMinimum", ">"),
        ("maximum", "<="),
        ("exclusiveMaximum", "<"),
    ):
        if key in schema:
            parts.append(f"{op} {schema[key]}")
    return " and ".join(parts)


def describe(schema: dict, plural: bool = False) -> str:
    """What a schema allows, in words."""
    if "enum" in schema:
        return "one of " + ", ".join(str(v) for v in schema["enum"])
    if "const" in schema:
        return str(schema["const"])
    if "oneOf" in schema or "anyOf" in schema:
        return ", or ".join(describe(s, plural) for s in schema.get("oneOf", schema.get("anyOf")))
    types = schema.get("type")
    if isinstance(types, list):
        return " or ".join(describe({**schema, "type": t}, plural) for t in types)
    bounds = _bounds(schema)
    if types == "integer":
        text = "integers" if plural else "an integer"
        return f"{text} {bounds}".strip()
    if types == "number":
        text = "numbers" if plural else "a number"
        return f"{text} {bounds}".strip()
    if types == "boolean":
        return "true or false"
    if types == "null":
        return "null"
    if types == "string":
        if "pattern" in schema:
            words = PATTERN_WORDS.get(schema["pattern"])
            if words is None:
                return f"{'strings' if plural else 'a string'} matching {schema['pattern']}"
            return f"{words[1] if plural else words[0]} {words[2]}"
        return "strings" if plural else "a string"
    if types == "array":
        items = describe(schema.get("items", {}), plural=True)
        extras = []
        if schema.get("minItems", 0) >= 1:
            extras.append("non-empty")
        if schema.get("uniqueItems"):
            extras.append("no duplicates")
        return f"a list ({', '.join(extras)}) of {items}" if extras else f"a list of {items}"
    if types == "object":
        return "a mapping with keys " + ", ".join(schema.get("properties", {}))
    return "see config/README.md"


def key_path(path: Iterable) -> str:
    """``import.packrat[0]`` from a jsonschema path (list indices 0-based, as in Python)."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _where(path: Iterable) -> tuple[str, str]:
    """('batch_sizes[1]', '') from a jsonschema path: the full key path, nothing apart."""
    return key_path(path), ""


def _suggest(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _value(v) -> str:
    return repr(v) if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v)


def format_error(err) -> list[str]:
    """One jsonschema error -> message lines naming the key and the allowed values."""
    kind = err.validator
    schema = err.schema
    key, item = _where(err.absolute_path)
    value = err.instance
    if kind == "additionalProperties":
        allowed = list(schema.get("properties", {}))
        extra = [k for k in value if k not in allowed]
        prefix = "" if key == "(top level)" else f"{key}."
        return [
            f"unknown config key '{prefix}{k}'{_suggest(k, allowed)}; allowed keys: "
            + ", ".join(allowed)
            for k in extra
        ]
    if kind == "required":
        missing = [k for k in schema["required"] if k not in value]
        props = schema.get("properties", {})
        prefix = "" if key == "(top level)" else f"{key}."
        return [
            f"config key '{prefix}{k}' is missing; allowed: {describe(props.get(k, {}))}"
            for k in missing
        ]
    if kind in ("oneOf", "anyOf"):
        # Report the branch that matches the value's type (threads: 'auto' or a list of ints).
        branches = schema[kind]
        for i, branch in enumerate(branches):
            want = branch.get("type")
            if (want == "array" and isinstance(value, list)) or (
                want == "string" and isinstance(value, str) and "const" not in branch
            ):
                sub = [e for e in err.context if e.relative_schema_path[0] == i]
                if sub:
                    return [line for e in sub for line in format_error(e)]
        return [
            f"config key '{key}'{item}: {_value(value)} is not allowed; allowed: {describe(schema)}"
        ]
    allowed = describe(schema)
    if kind == "enum":
        return [
            f"config key '{key}'{item}: {_value(value)} is not allowed"
            f"{_suggest(value, map(str, schema['enum']))}; allowed: {allowed}"
        ]
    if kind == "type":
        what = _type_of(value)
        return [f"config key '{key}'{item}: {_value(value)} is {what}; allowed: {allowed}"]
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        return [f"config key '{key}'{item}: {_value(value)} is out of range; allowed: {allowed}"]
    if kind == "minItems":
        return [f"config key '{key}': the list is empty; allowed: {allowed}"]
    if kind == "uniqueItems":
        seen, dups = set(), []
        for v in value:
            k = repr(v)
            if k in seen and v not in dups:
                dups.append(v)
            seen.add(k)
        return [
            f"config key '{key}': {', '.join(_value(d) for d in dups) or 'a value'} appears more "
            f"than once; each value may appear once"
        ]
    if kind == "pattern":
        return [f"config key '{key}'{item}: {_value(value)} is not allowed; allowed: {allowed}"]
    if kind == "minLength":
        return [f"config key '{key}'{item}: the string is empty; allowed: {allowed}"]
    return [f"config key '{key}'{item}: {err.message}; allowed: {allowed}"]


# -- normalisation -------------------------------------------------------------------------------
# Normalised before anything is checked or used, driven by the schema's types (never per key):
# `--config` list items arrive as strings (Snakemake parses them with YAML's BaseLoader) and
# `--config use_smt=true` as the string 'true'; YAML gives 1000.0 and 0.0 for integral values.
NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
BOOLEAN_STRINGS = {"true": True, "false": False}


def _types(schema: dict) -> set[str]:
    """The JSON types a schema allows, its oneOf/anyOf branches and constants included."""
    t = schema.get("type")
    out = {t} if isinstance(t, str) else set(t or ())
    for branch in schema.get("oneOf", []) + schema.get("anyOf", []):
        out |= _types(branch)
    return out


def _branch(schema: dict, kind: str) -> dict | None:
    """The (sub-)schema that describes ``kind`` ('array' or 'object') values."""
    t = schema.get("type")
    if t == kind or (isinstance(t, list) and kind in t):
        return schema
    for branch in schema.get("oneOf", []) + schema.get("anyOf", []):
        found = _branch(branch, kind)
        if found is not None:
            return found
    return None


def coerce(value, schema: dict):
    """``value`` normalised to the types ``schema`` allows: 'null'/'none'/'~' -> None,
    'true'/'False' -> bool, '8' and 8.0 -> 8 (integral only), '0.5' -> 0.5; lists and mappings
    item by item. Anything else is returned unchanged (and refused by the schema check)."""
    types = _types(schema)
    if isinstance(value, str):
        text = value.strip()
        if "null" in types and text.lower() in NULL_STRINGS:
            return None
        if "boolean" in types and text.lower() in BOOLEAN_STRINGS:
            return BOOLEAN_STRINGS[text.lower()]
        if types & {"integer", "number"} and NUMBER.fullmatch(text):
            if re.fullmatch(r"[-+]?\d+", text):
                return int(text)
            value = float(text)
        else:
            return value
    if isinstance(value, float) and "integer" in types and value.is_integer():
        return int(value)  # is_integer() is false for nan and inf
    if isinstance(value, list):
        array = _branch(schema, "array")
        if array is not None and "items" in array:
            return [coerce(v, array["items"]) for v in value]
    if isinstance(value, dict):
        obj = _branch(schema, "object")
        if obj is not None:
            props = obj.get("properties", {})
            return {k: coerce(v, props[k]) if k in props else v for k, v in value.items()}
    return value


def normalize_results(path: str) -> str:
    """``./results/`` -> ``results``, ``/scratch//x/`` -> ``/scratch/x``: one spelling per
    folder, so output paths (and Snakemake's record of them) never differ by spelling."""
    return os.path.normpath(path)


def normalize(config: dict, schema: dict) -> None:
    """In place: defaults for missing keys, then every value coerced to its schema type."""
    props = schema.get("properties", {})
    for key, prop in props.items():
        if key not in config and "default" in prop:
            config[key] = copy.deepcopy(prop["default"])
    for key, value in list(config.items()):
        if key in props:
            config[key] = coerce(value, props[key])
    if isinstance(config.get("results"), str) and config["results"].strip():
        config["results"] = normalize_results(config["results"])


def nonfinite_problems(value, path=()) -> list[str]:
    """nan and inf pass every schema bound (nan compares false with anything): refuse them."""
    if isinstance(value, float) and not math.isfinite(value):
        return [f"config key '{key_path(path)}': {value} is not a finite number; allowed: numbers"]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in nonfinite_problems(v, (*path, i))]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in nonfinite_problems(v, (*path, k))]
    return []


def schema_problems(config: dict, schema: dict) -> list[str]:
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.path])
    problems: list[str] = []
    for err in errors:
        path = list(err.absolute_path)
        if err.validator in ("enum", "pattern") and path and path[0] in NAME_KEYS:
            continue  # name_problems reports it with the registry's names
        for line in format_error(err):
            if line not in problems:
                problems.append(line)
    return problems


# -- semantic checks -----------------------------------------------------------------------------
# An "allowed" list longer than this is replaced by the nearest names and a command that lists all.
LONG_LIST = 12
LIST_COMMAND = "PYTHONPATH=workflow/scripts python -m numa_effects.config --list"


def _unknown(key: str, values, known: Iterable[str], what: str) -> list[str]:
    known = list(known)
    problems = []
    for i, v in enumerate(values):
        if not isinstance(v, str) or v in known:
            continue
        if len(known) <= LONG_LIST:
            allowed = ", ".join(known)
            problems.append(
                f"config key '{key}[{i}]': {_value(v)} is not {what}{_suggest(v, known)}; "
                f"allowed: {allowed}"
            )
            continue
        near = difflib.get_close_matches(v, known, n=5, cutoff=0.5)
        nearest = f"nearest: {', '.join(near)}; " if near else ""
        problems.append(
            f"config key '{key}[{i}]': {_value(v)} is not {what}; "
            f"{nearest}all {len(known)}: {LIST_COMMAND} {key}"
        )
    return problems


def name_problems(config: dict) -> list[str]:
    problems = []
    models = config.get("models")
    if isinstance(models, list):
        problems += _unknown(
            "models", models, CLASSIFICATION_MODELS, "a torchvision classification model"
        )
    opts = config.get("optimizations")
    if isinstance(opts, list):
        problems += _unknown("optimizations", opts, OPTIMIZATIONS, "a known optimization")
    places = config.get("placements")
    if isinstance(places, list):
        problems += _unknown("placements", places, placement_mod.PLACEMENTS, "a known placement")
    lo, hi = config.get("min_iterations"), config.get("max_iterations")
    if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
        problems.append(
            f"config key 'min_iterations': {lo} is more than max_iterations ({hi}); "
            f"allowed: min_iterations <= max_iterations"
        )
    return problems


def load_topology(config: dict) -> topology_mod.Topology:
    """The planning topology: the ``topology`` file, or this machine."""
    path = config.get("topology")
    if not path:
        return topology_mod.current()
    try:
        return topology_mod.load(path)
    except Exception as exc:
        reason = (
            str(exc)
            if isinstance(exc, topology_mod.TopologyError)
            else (f"cannot read topology file {path}: {type(exc).__name__}: {exc}")
        )
        raise ConfigError(
            [
                f"config key 'topology': {reason}; allowed: null (this machine), the JSON "
                f"written to results/machine.json, or `lscpu -p` output"
            ]
        ) from None


# `results` may be relative or absolute (a cluster user writes to /scratch/...), but never a
# system folder, the workflow's own folders, a folder holding the workflow, or a file.
SYSTEM_DIRS = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/boot", "/dev")
SYSTEM_DIRS += ("/proc", "/sys", "/run")
WORKFLOW_DIRS = ("workflow", "config", "profiles", "tests", "docs", "envs", "tools")
WORKFLOW_DIRS += ("benchmarks", ".ci", ".git", ".snakemake", ".venv")
REPO_DIR = SCHEMA_PATH.parents[2]


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def results_problems(
    results: str, workdir: str | Path | None = None, workflow_dir: str | Path | None = None
) -> list[str]:
    """Why ``results`` may not hold this workflow's outputs ([] if it may)."""
    workdir = Path(os.path.abspath(workdir or os.getcwd()))
    workflow_dir = Path(os.path.abspath(workflow_dir or REPO_DIR))
    given = Path(os.path.normpath(workdir / results))
    seen = [given, Path(os.path.realpath(given))]  # symlinks resolved too
    allowed = (
        "allowed: a folder of its own, relative or absolute (results, /scratch/$USER/run1), "
        f"not / or inside {', '.join(SYSTEM_DIRS)}, not inside the workflow's folders "
        f"({', '.join(d + '/' for d in WORKFLOW_DIRS)}), not a folder that holds the workflow "
        "or the working directory, not a file"
    )
    why = None
    for path in seen:
        protected = [(Path(d), "a system folder") for d in SYSTEM_DIRS]
        protected += [(Path(os.path.realpath(d)), "a system folder") for d in SYSTEM_DIRS]
        for base in {workflow_dir, workdir}:
            protected += [(base / d, "one of the workflow's own folders") for d in WORKFLOW_DIRS]
        if path == Path("/"):
            why = "the root folder"
        elif _inside(workflow_dir, path) or _inside(workdir, path):
            why = "the working directory or a folder that holds it or the workflow"
        else:
            for folder, what in protected:
                if _inside(path, folder):
                    why = f"{'' if path == folder else 'inside '}{what} ({folder})"
                    break
        if why:
            break
    if why is None:
        existing = next((p for p in [given, *given.parents] if p.exists()), None)
        if existing is not None and not existing.is_dir():
            why = (
                "an existing file, not a folder"
                if existing == given
                else f"below {existing}, which is a file, not a folder"
            )
    return [f"config key 'results': {results!r} is {why}; {allowed}"] if why else []


def import_problems(config: dict) -> list[str]:
    """The PackRat sources of ``import.packrat`` exist and can be read."""
    imported = config.get("import")
    sources = imported.get("packrat") if isinstance(imported, dict) else None
    if not isinstance(sources, list) or not sources:
        return []
    from numa_effects.tables import packrat as packrat_mod  # pandas: only when importing

    allowed = (
        "allowed: PackRat results folders (or one of their CSVs) holding "
        f"{packrat_mod.LATENCY_FILE} and {packrat_mod.THROUGHPUT_FILE}"
    )
    problems = []
    for i, source in enumerate(sources):
        try:
            packrat_mod.source_files(source)
        except Exception as exc:
            problems.append(f"config key 'import.packrat[{i}]': {exc}; {allowed}")
    if not problems:
        try:
            packrat_mod.keys(sources)
        except Exception as exc:
            problems.append(f"config key 'import.packrat': {type(exc).__name__}: {exc}; {allowed}")
    return problems


def max_runnable_threads(topo: topology_mod.Topology, use_smt: bool) -> int:
    """The most threads any registered placement can run on ``topo`` (0 if none)."""
    total = sum(len(topo.node_cpus(n, use_smt)) for n in topo.nodes)
    for t in range(total, 0, -1):
        for name in placement_mod.PLACEMENTS:
            if isinstance(placement_mod.plan(topo, t, name, use_smt), placement_mod.Plan):
                return t
    return 0


def thread_problems(config: dict, topo: topology_mod.Topology) -> list[str]:
    threads = config.get("threads")
    if not isinstance(threads, list) or not all(isinstance(t, int) for t in threads):
        return []
    use_smt = bool(config.get("use_smt"))
    limit = max_runnable_threads(topo, use_smt)
    too_many = sorted(t for t in threads if t > limit)
    if not too_many:
        return []
    unit = "logical CPUs" if use_smt else "physical cores"
    nodes = len(topo.nodes)
    machine = f"topology file {config['topology']}" if config.get("topology") else "this machine"
    return [
        f"config key 'threads': {', '.join(map(str, too_many))} "
        f"{'is' if len(too_many) == 1 else 'are'} more than {machine} can ever run "
        f"({limit} {unit} usable in total on {nodes} NUMA node{'s' if nodes > 1 else ''}, "
        f"use_smt: {str(use_smt).lower()}); allowed: 1..{limit}, or auto. (Counts above one "
        f"node's cores but within the total are fine: placements that cannot run them are "
        f"skipped and listed in skipped.csv.)"
    ]


def check(
    config: dict,
    schema_path: str | Path = SCHEMA_PATH,
    workdir: str | Path | None = None,
    workflow_dir: str | Path | None = None,
) -> topology_mod.Topology:
    """Validate ``config`` in place (defaults filled, values normalised) and return the
    planning topology. ``workdir``: where relative paths are read (Snakemake's working
    directory; default the current one).

    Raises ``ConfigError`` listing every problem found."""
    schema = load_schema(schema_path)
    if not isinstance(config, dict):
        raise ConfigError([f"the config is {_type_of(config)}; allowed: a mapping of keys"])
    normalize(config, schema)
    problems = schema_problems(config, schema)
    found = (re.match(r"(?:unknown )?config key '([^'.\[]+)", p) for p in problems)
    bad_keys = {m.group(1) for m in found if m}
    problems += nonfinite_problems(config) + name_problems(config)
    # The file-system checks of the keys that passed the schema, in the same report.
    if "results" not in bad_keys:
        problems += results_problems(config["results"], workdir, workflow_dir)
    if "import" not in bad_keys:
        problems += import_problems(config)
    topo = None
    if "topology" not in bad_keys:
        try:
            topo = load_topology(config)
        except ConfigError as exc:
            problems += exc.problems
    if problems:
        raise ConfigError(problems)
    problems = thread_problems(config, topo)
    if problems:
        raise ConfigError(problems)
    return topo


def check_or_exit(config: dict, **kwargs) -> topology_mod.Topology:
    """``check``, but a problem ends the process with exit status 1 and its lines on stderr,
    never a traceback. Snakemake prints a traceback line for any exception raised while it
    reads the workflow, so common.smk calls this: SystemExit is not an Exception to it."""
    try:
        return check(config, **kwargs)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
    except Exception as exc:
        print(
            f"invalid configuration: the check itself failed ({type(exc).__name__}: {exc}); "
            f"`{LIST_COMMAND.rsplit(' ', 1)[0]} --traceback FILE...` shows where",
            file=sys.stderr,
        )
    raise SystemExit(1)


# -- command line --------------------------------------------------------------------------------
def _merge(config: dict, update: dict) -> None:
    """Nested keys merged, later values winning (as Snakemake's update_config)."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            _merge(config[key], value)
        else:
            config[key] = value


def load_files(paths: list[str]) -> dict:
    """Merge config files like Snakemake does (JSON, else YAML; later files override keys),
    with YAML errors that name the file, line and column."""
    import json

    import yaml

    config: dict = {}
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or "not UTF-8 text"
            raise ConfigError([f"cannot read config file {path}: {reason}"]) from None
        try:
            data = json.loads(text)
        except ValueError:
            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
                problem = getattr(exc, "problem", None) or str(exc)
                raise ConfigError(
                    [f"config file {path}{where} is not valid YAML: {problem}"]
                ) from None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ConfigError([f"config file {path} holds {_type_of(data)}, not a mapping of keys"])
        _merge(config, data)
    return config


def parse_config_args(entries: list[str]) -> dict:
    """``--config key=value ...`` parsed exactly as Snakemake parses it."""
    from snakemake.cli import parse_config

    try:
        return parse_config(entries)
    except ValueError as exc:
        raise ConfigError([f"--config: {exc}"]) from None


def registry(name: str) -> list[str]:
    return {
        "models": list(CLASSIFICATION_MODELS),
        "optimizations": list(OPTIMIZATIONS),
        "placements": list(placement_mod.PLACEMENTS),
    }[name]


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m numa_effects.config",
        description="Check a config as the workflow will, with the same messages: files "
        "(later ones override keys), then --config values.",
    )
    ap.add_argument("files", nargs="*", default=["config/config.yaml"])
    ap.add_argument("--config", nargs="+", default=[], metavar="KEY=VALUE", help="as snakemake's")
    ap.add_argument("--directory", "-d", default=None, help="the working directory, as snakemake's")
    ap.add_argument("--list", choices=["models", "optimizations", "placements"], help="print all")
    ap.add_argument("--traceback", action="store_true", help="let an unexpected error raise")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(registry(args.list)))
        return 0
    try:
        config = load_files(args.files)
        _merge(config, parse_config_args(args.config))
        if args.traceback:
            topo = check(config, workdir=args.directory)
        else:
            topo = check_or_exit(config, workdir=args.directory)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 1
    except SystemExit as exc:
        return int(exc.code or 0)
    print(f"ok: {' + '.join(args.files)} (planned against {topo.source or 'this machine'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
