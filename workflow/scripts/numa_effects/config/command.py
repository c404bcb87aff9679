"""A Snakemake command line checked before Snakemake reads it, one line per problem.

Snakemake answers some mistakes itself, before any workflow code runs, with a traceback, a page
of usage text, or a line that names neither the file nor the item (docs/troubleshooting.md):
``cli``'s ``--run|--snakemake ARGS...`` parse them with Snakemake's own parser and check each
``--config`` item, ``--configfile`` and target here first.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
from pathlib import Path

from numa_effects.config import files
from numa_effects.config.problem import ConfigError, Problem, suggest

# A --config key as Snakemake accepts it (snakemake.cli.parse_config).
CONFIG_KEY = re.compile(r"[a-zA-Z_][\w-]*\w$")
CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
PAIRS = {"[": "]", "{": "}", "(": ")"}
HELP = "`snakemake --help` lists every option"
ITEM = re.compile(r"[a-zA-Z_][\w-]*=.*")  # a KEY=VALUE item where a file or target was meant


class _ParseError(Exception):
    pass


def _raise(self, message):  # argparse.ArgumentParser.error, raising instead of exiting
    raise _ParseError(message)


def parse(argv: list[str]) -> argparse.Namespace | None:
    """``argv`` parsed as Snakemake parses it (profiles applied), or ConfigError with one line
    instead of its usage text; None for ``--help`` and ``--version`` (nothing to check)."""
    from snakemake import cli

    parser = cli.get_argument_parser()
    problems = _one_dash(argv, parser)
    if problems:
        raise ConfigError(problems)
    said = io.StringIO()
    error = argparse.ArgumentParser.error
    argparse.ArgumentParser.error = _raise
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(said):
            return cli.parse_args(argv)[1]
    except SystemExit as exc:
        if not exc.code:  # --help, --version: printed and done
            return None
        raise ConfigError([Problem("", f"snakemake's command line: {_last(said)}")]) from None
    except _ParseError as exc:
        raise ConfigError([Problem("", _usage_line(str(exc), parser))]) from None
    except Exception as exc:  # a profile Snakemake cannot read, say
        text = _last(said) or f"{type(exc).__name__}: {exc}"
        raise ConfigError([Problem("", f"snakemake's command line: {text}")]) from None
    finally:
        argparse.ArgumentParser.error = error


def _last(said: io.StringIO) -> str:
    """The last line Snakemake printed, but for its banner ("Using ... profile ...")."""
    lines = [ln.strip() for ln in said.getvalue().splitlines()]
    return next((ln for ln in reversed(lines) if ln and not ln.startswith("Using ")), "")


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return [o for o in parser._option_string_actions if o.startswith("--")]


def _one_dash(argv: list[str], parser: argparse.ArgumentParser) -> list[Problem]:
    """``-config``: argparse reads it as ``-c onfig`` (cores) and the rest as targets."""
    options = set(_options(parser))
    return [
        Problem("", f"option {arg} has one dash; allowed: -{arg} ({HELP})")
        for arg in argv
        if re.fullmatch(r"-[a-zA-Z][\w-]+", arg) and f"-{arg}" in options
    ]


def _usage_line(message: str, parser: argparse.ArgumentParser) -> str:
    unknown = re.match(r"unrecognized arguments: (.*)", message)
    if unknown:
        first = next((a for a in unknown.group(1).split() if a.startswith("-")), None)
        hint = suggest(first, _options(parser)) if first else ""
        return f"snakemake's command line: unknown argument(s) {unknown.group(1)}{hint}; {HELP}"
    return f"snakemake's command line: {message}; {HELP}"


def config_item_problems(items: list[str]) -> list[Problem]:
    """What Snakemake would refuse (or misread) in the ``--config`` items, one line each."""
    texts, i = [], 0
    while i < len(items):
        item = items[i]
        key, eq, value = item.partition("=")
        split = _shell_split(items, i)
        if split > i + 1:
            whole = " ".join(items[i:split])
            parts = " and ".join(repr(p) for p in items[i:split])
            texts.append(
                f"--config {whole}: the shell split this value at its spaces into {parts}; "
                f"allowed: the item quoted (--config '{whole}') or written without spaces "
                f"({''.join(whole.split())})"
            )
        elif not eq:
            texts.append(
                f"--config item {item!r} has no '=' (a target after --config is read as "
                "an item: put targets before --config); allowed: KEY=VALUE, e.g. seed=1"
            )
        elif "." in key and all(CONFIG_KEY.match(k) for k in key.split(".")):
            top, rest = key.split(".", 1)
            texts.append(
                f"--config {item}: a nested key cannot be set with a dot; allowed: the "
                f'mapping written whole, e.g. --config "{top}={_nested(rest, value)}" (its '
                "other keys keep their values), or a config file"
            )
        elif not CONFIG_KEY.match(key):
            texts.append(
                f"--config item {item!r}: {key!r} is not a config key; allowed: KEY=VALUE "
                "with a key of config/README.md"
            )
        i = split
    return [Problem("", t) for t in texts]


def _nested(path: str, value: str) -> str:
    """``a.b`` and ``1`` -> ``{a: {b: 1}}``."""
    out = value
    for part in reversed(path.split(".")):
        out = f"{{{part}: {out}}}"
    return out


def _open_brackets(text: str) -> int:
    return sum(ch in PAIRS for ch in text) - sum(ch in PAIRS.values() for ch in text)


def _shell_split(items: list[str], i: int) -> int:
    """The end of the items that were one value before the shell split it at spaces: from an
    item whose brackets are left open, the following items without '=' until they close."""
    _, eq, value = items[i].partition("=")
    depth = _open_brackets(value) if eq else 0
    j = i + 1
    while depth > 0 and j < len(items) and "=" not in items[j]:
        depth += _open_brackets(items[j])
        j += 1
    return j


def configfile_problems(configfiles: list[Path]) -> list[Problem]:
    """One line for each ``--configfile`` that cannot be read (``files.read``)."""
    problems = []
    for path in configfiles:
        missing = not os.path.exists(path)
        if missing and ITEM.fullmatch(path.name):
            text = (
                f"config file {path.name!r} is a KEY=VALUE item (after --configfile, it is read "
                f"as a file name); allowed: --config {path.name}"
            )
        elif missing and path.suffix not in CONFIG_SUFFIXES:
            text = (
                f"config file {path} does not exist (a target after --configfile is read as a "
                "config file: put targets before --configfile, e.g. snakemake all --configfile "
                "my.yaml)"
            )
        else:
            try:
                files.read(path)
            except ConfigError as exc:
                problems += exc.problems
            continue
        problems.append(Problem("", text))
    return problems


def target_problems(targets: list[str]) -> list[Problem]:
    return [
        Problem("", f"target {t!r} is a KEY=VALUE item; allowed: --config {t} (after the targets)")
        for t in targets
        if ITEM.fullmatch(t)
    ]


def problems(args: argparse.Namespace) -> list[Problem]:
    """Everything wrong with a parsed command line, before its config is checked."""
    return (
        config_item_problems(list(args.config or []))
        + configfile_problems(list(args.configfile or []))
        + target_problems([str(t) for t in args.targets or []])
    )
