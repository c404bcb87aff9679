"""Config validation before any job starts, with messages a user can act on.

``check(config, schema_path)`` is called by ``workflow/rules/common.smk`` while Snakemake parses
the workflow (so ``snakemake -n`` fails the same way as a real run, before any job). It

1. fills schema defaults for missing keys (as ``snakemake.utils.validate`` would);
2. accepts digit strings inside integer lists (``--config batch_sizes='[1,8]'`` reaches the
   workflow as ``['1', '8']``: Snakemake parses list values with YAML's BaseLoader) and the
   strings ``null``/``none``/``~`` for nullable keys;
3. validates against ``workflow/schemas/config.schema.yaml`` with jsonschema and turns every
   error into one line: ``config key 'batch_sizes': item 2 is 0; allowed: integers >= 1``;
4. checks what the schema cannot: model names (against the checked-in torchvision list in
   ``models``), optimizations and placements against their registries, ``min_iterations`` <=
   ``max_iterations``, the ``topology`` file, and thread counts no placement could ever run on
   the planning machine (counts above one node's cores are fine: those cells are skipped).

All problems are reported at once, as a ``ConfigError`` (a ``ValueError``). Nothing here imports
torch. ``python -m numa_effects.validation FILE...`` checks config files the same way outside
Snakemake and, unlike Snakemake, says where a YAML syntax error is.
"""

from __future__ import annotations

import copy
import difflib
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from . import placement as placement_mod
from . import topology as topology_mod
from .models import CLASSIFICATION_MODELS
from .optimizations import OPTIMIZATIONS

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "config.schema.yaml"
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
        head = "invalid configuration" + (f" ({n} problems)" if n > 1 else "") + ":"
        super().__init__(
            "\n".join([head, *(f"  - {p}" for p in problems)])
            + "\n(every key is described in config/README.md)"
        )


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


def _where(path: Iterable) -> tuple[str, str]:
    """('batch_sizes', ' item 2') from a jsonschema path; nested keys are dotted."""
    keys, items = [], []
    for p in path:
        if isinstance(p, int):
            items.append(str(p + 1))
        else:
            keys.append(str(p))
    key = ".".join(keys) if keys else "(top level)"
    return key, (f" item {'/'.join(items)}" if items else "")


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
        where = "" if key == "(top level)" else f" under '{key}'"
        return [
            f"unknown config key '{k}'{where}{_suggest(k, allowed)}; allowed keys: "
            + ", ".join(allowed)
            for k in extra
        ]
    if kind == "required":
        missing = [k for k in schema["required"] if k not in value]
        props = schema.get("properties", {})
        return [
            f"config key '{k}' is missing; allowed: {describe(props.get(k, {}))}" for k in missing
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
def _int_item_keys(schema: dict) -> list[str]:
    """Top-level keys whose value is (or may be) a list of integers."""
    out = []
    for key, prop in schema.get("properties", {}).items():
        branches = prop.get("oneOf", prop.get("anyOf", [prop]))
        if any(
            b.get("type") == "array" and b.get("items", {}).get("type") == "integer"
            for b in branches
        ):
            out.append(key)
    return out


def normalize(config: dict, schema: dict) -> None:
    """In place: defaults for missing keys, digit strings in integer lists, 'null' strings."""
    props = schema.get("properties", {})
    for key, prop in props.items():
        if key not in config and "default" in prop:
            config[key] = copy.deepcopy(prop["default"])
    for key in _int_item_keys(schema):
        value = config.get(key)
        if isinstance(value, list):
            config[key] = [
                int(v) if isinstance(v, str) and re.fullmatch(r"\s*-?\d+\s*", v) else v
                for v in value
            ]
    for key, prop in props.items():
        types = prop.get("type")
        nullable = isinstance(types, list) and "null" in types
        value = config.get(key)
        if nullable and isinstance(value, str) and value.strip().lower() in NULL_STRINGS:
            config[key] = None


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
def _unknown(key: str, values, known: Iterable[str], what: str) -> list[str]:
    known = list(known)
    return [
        f"config key '{key}': {_value(v)} is not {what}{_suggest(v, known)}; allowed: "
        + ", ".join(known)
        for v in values
        if isinstance(v, str) and v not in known
    ]


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
    except topology_mod.TopologyError as exc:
        raise ConfigError(
            [
                f"config key 'topology': {exc}; allowed: null (this machine), the JSON "
                f"written to results/machine.json, or `lscpu -p` output"
            ]
        ) from None


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


def check(config: dict, schema_path: str | Path = SCHEMA_PATH) -> topology_mod.Topology:
    """Validate ``config`` in place (defaults filled) and return the planning topology.

    Raises ``ConfigError`` listing every problem found."""
    schema = load_schema(schema_path)
    if not isinstance(config, dict):
        raise ConfigError([f"the config is {_type_of(config)}; allowed: a mapping of keys"])
    normalize(config, schema)
    problems = schema_problems(config, schema) + name_problems(config)
    if problems:
        raise ConfigError(problems)
    topo = load_topology(config)
    problems = thread_problems(config, topo)
    if problems:
        raise ConfigError(problems)
    return topo


# -- command line --------------------------------------------------------------------------------
def load_files(paths: list[str]) -> dict:
    """Merge config files like Snakemake does (later files override keys), with YAML errors
    that name the file, line and column."""
    import yaml

    config: dict = {}
    for path in paths:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise ConfigError([f"cannot read config file {path}: {exc.strerror}"]) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise ConfigError([f"config file {path}{where} is not valid YAML: {problem}"]) from None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ConfigError([f"config file {path} holds {_type_of(data)}, not a mapping of keys"])
        config.update(data)
    return config


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m numa_effects.validation",
        description="Check config files as the workflow will (later files override keys).",
    )
    ap.add_argument("files", nargs="*", default=["config/config.yaml"])
    args = ap.parse_args(argv)
    try:
        config = load_files(args.files)
        topo = check(config)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"ok: {' + '.join(args.files)} (planned against {topo.source or 'this machine'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
