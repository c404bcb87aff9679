"""A Snakemake command line checked before Snakemake reads it, one line per problem (Snakemake
answers some mistakes with a traceback, a page of usage or a line naming neither file nor item:
docs/troubleshooting.md). Only what the checker needs is read (``parse_known_args``):
``--configfile``, ``--config``, ``--directory``, ``--profile`` and the targets."""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import functools
import re
from pathlib import Path

import yaml

from numa_effects.config import files, schema
from numa_effects.config.problem import ConfigError, Problem, suggest
from numa_effects.config.schema import REPO_DIR

CONFIG_KEY = re.compile(r"[a-zA-Z_][\w-]*\w$")  # a --config key as Snakemake accepts it
OWN = (("--configfile", "--configfiles"), ("--config", "-C"), ("--directory", "-d"), ("--profile",))
# Snakemake's options that take no value (the word after one is a target) and those that take a
# list of words (not targets). Any other option is taken to take one value and the KEY=VALUE
# items after it, so a target is never refused by mistake: at worst it is left to Snakemake.
FLAGS = "-n --dry-run --dryrun -p --printshellcmds -k --keep-going -F --forceall -f --force "
FLAGS += "--ri --rerun-incomplete --nolock --unlock -t --touch --notemp --nt -S --summary"
LISTS = (("-R", "--forcerun"), ("-U", "--until"), ("-O", "--omit-from"), ("--allowed-rules",))
LISTS += (("--rerun-triggers",), ("--sdm", "--software-deployment-method"), ("-q", "--quiet"))
RULE = re.compile(r"^\s*(?:rule|checkpoint)\s+(\w+)\s*:|^\s*name:\s*\n\s*f\"(\w+)\{", re.M)
NEEDS = {"compare.smk": "compare", "packrat.smk": "import"}  # its rules need this config key


def parse(argv: list[str]) -> argparse.Namespace | None:
    """The options the checker reads (``targets``: the words no option takes; ``configfile`` and
    ``config``: the command line's, else the profile's), or ConfigError with one line; None for
    ``--help`` and ``--version`` (nothing to check)."""
    if {"-h", "--help", "-v", "--version"} & set(argv):
        return None
    ap = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    for names, nargs in zip(OWN, ("+", "*", None, None), strict=True):
        ap.add_argument(*names, nargs=nargs, default=[] if nargs else None)
    for names in LISTS:
        ap.add_argument(*names, nargs="*")
    for flag in FLAGS.split():
        ap.add_argument(flag, action="store_true")
    try:
        args, rest = ap.parse_known_args(argv)
    except argparse.ArgumentError as exc:
        raise ConfigError([Problem("", f"snakemake's command line: {exc}")]) from None
    own = [name for names in OWN for name in names if name.startswith("--")]
    found = [f"option {a} has one dash; allowed: -{a}" for a in argv if f"-{a}" in own]
    args.targets, i = [], 0
    while i < len(rest):
        word, option = rest[i], rest[i].split("=")[0]
        near = difflib.get_close_matches(option, own, n=1, cutoff=0.75)
        if word.startswith("--") and option not in own and near:  # e.g. --confg: not read
            found.append(f"unknown option {word} (did you mean '{near[0]}'?)")
        if not word.startswith("-"):
            args.targets.append(word)
            i += 1
            continue
        i += 1 + ("=" not in word and i + 1 < len(rest) and not rest[i + 1].startswith("-"))
        while i < len(rest) and files.ITEM.fullmatch(rest[i]):  # --resources mem_mb=1 slots=2
            i += 1
    if found:
        raise ConfigError([Problem("", text) for text in found])
    try:  # a profile's config.yaml gives defaults of the options (elsewhere: Snakemake's)
        prof = yaml.safe_load(Path(args.profile, "config.yaml").read_text()) if args.profile else {}
    except (OSError, yaml.YAMLError):
        prof = {}
    prof = prof if isinstance(prof, dict) else {}
    given = args.configfile or prof.get("configfile") or prof.get("configfiles") or []
    items = args.config or prof.get("config") or []
    args.configfile = [str(f) for f in ([given] if isinstance(given, str) else given)]
    args.config = [f"{k}={v}" for k, v in items.items()] if isinstance(items, dict) else items
    return args


def config_item_problems(items: list[str]) -> list[Problem]:
    """What Snakemake would refuse (or misread) in the ``--config`` items, one line each."""
    texts, i = [], 0
    while i < len(items):
        item, split = items[i], _shell_split(items, i)
        (key, eq, value), whole = item.partition("="), " ".join(items[i:split])
        top, *rest = key.split(".")
        if split > i + 1:
            texts.append(
                f"--config {whole}: the shell split this value at its spaces into "
                f"{' and '.join(map(repr, items[i:split]))}; allowed: the item quoted (--config "
                f"'{whole}') or written without spaces ({''.join(whole.split())})"
            )
        elif not eq:
            texts.append(
                f"--config item {item!r} has no '=' (a target after --config is read as an item: "
                "put targets before --config); allowed: KEY=VALUE, e.g. seed=1"
            )
        elif rest and all(CONFIG_KEY.match(k) for k in key.split(".")):
            nested = functools.reduce(lambda v, k: f"{{{k}: {v}}}", reversed(rest), value)
            texts.append(
                f"--config {item}: a nested key cannot be set with a dot; allowed: the mapping "
                f'written whole, e.g. --config "{top}={nested}" (its other keys keep their '
                "values), or a config file"
            )
        elif not CONFIG_KEY.match(key):
            texts.append(
                f"--config item {item!r}: {key!r} is not a config key; allowed: KEY=VALUE with a "
                "key of config/README.md"
            )
        i = split
    return [Problem("", t) for t in texts]


def _shell_split(items: list[str], i: int) -> int:
    """The end of the items that were one value before the shell split it at spaces: from an
    item whose brackets are left open, the following items without '=' until they close."""
    _, eq, value = items[i].partition("=")
    depth, j = _opened(value) if eq else 0, i + 1
    while depth > 0 and j < len(items) and "=" not in items[j]:
        depth, j = depth + _opened(items[j]), j + 1
    return j


def _opened(text: str) -> int:
    return sum(map(text.count, "[{(")) - sum(map(text.count, "]})"))


def target_problems(targets: list[str], config: dict) -> list[Problem]:
    """A target that is a KEY=VALUE item, or a word (no ``/``: every output is inside the
    results folder) that names no rule of the workflow (``plot_*``: each plot rule) with
    ``config``."""
    known: dict[str, str | None] = {}  # every rule and the config key it needs
    for path in [REPO_DIR / "Snakefile", *sorted(REPO_DIR.glob("workflow/rules/*.smk"))]:
        for name, prefix in RULE.findall(path.read_text()):
            known.setdefault(name or f"{prefix}*", NEEDS.get(path.name))
    names, problems = [name for name, key in known.items() if key is None or config.get(key)], []
    for t in targets:
        if files.ITEM.fullmatch(t):
            text = f"target {t!r} is a KEY=VALUE item; allowed: --config {t} (after the targets)"
        elif "/" in t or any(fnmatch.fnmatchcase(t, name) for name in names):
            continue
        elif t in known:
            described = schema.load()["properties"][known[t]]["description"]
            text = f"target {t!r} needs config key '{known[t]}' ({re.split('[:;] ', described)[0]})"
        else:
            text = f"target {t!r} is not a rule{suggest(t, names)}; allowed: {', '.join(names)}"
            text += ", or an output file"
        problems.append(Problem("", text))
    return problems
