"""The plan of a comparison of result folders (config key ``compare``): its inputs, tables
and page."""

from __future__ import annotations

import os

from numa_effects.plan import paths


class Compare:
    def compare_path(self, pattern: str, compare: str | None = None, **fields) -> str:
        """``pattern`` (a ``plan.paths`` COMPARE_* constant) for the comparison ``compare``
        (default: the wildcard ``{compare}``)."""
        return self.path(pattern.replace("{compare}", compare or "{{compare}}").format(**fields))

    def compare_table(self, table: str, compare: str | None = None) -> str:
        return self.compare_path(paths.COMPARE_TABLE, compare, name=table)

    def compare_inputs(self) -> dict[str, list[str]]:
        """The files of the compared folders a comparison reads; peak and samples tables only
        where a folder has them (an import has neither)."""
        runs = self.compare["runs"] if self.compare else []

        def where(table):
            return [p for p in (f"{r}/{paths.table(table)}" for r in runs) if os.path.isfile(p)]

        return {
            "cells": [f"{r}/{paths.table('cells')}" for r in runs],
            "machines": [f"{r}/{paths.MACHINE}" for r in runs],
            "peaks": where("peak"),
            "samples": where("samples"),
        }

    def compare_targets(self) -> list[str]:
        """The comparison's tables and page ([] when the config compares nothing)."""
        if not self.compare:
            return []
        name = self.compare["name"]
        out = [self.compare_table(t, name) for t in paths.COMPARE_TABLES]
        return [*out, self.compare_path(paths.COMPARE_PAGE, name)]
