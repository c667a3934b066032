"""What ``acid platform materialize`` prints while its run runs, and where the rest goes.

:class:`StepLines` listens to the run's events (``DagsterInstance.add_event_listener``) and
prints a line as each asset step starts and one as each step ends, with the seconds since the
run started::

    [   0.9s] ▶ retail/sales  2024-01-01…2024-01-03
    [   1.0s] ✓ retail/sales  2024-01-01…2024-01-03  +600 ~0 -0  600 rows  0.07s
    [   1.1s] ✓ retail/sales  checks passed: files_match_record  0.03s

(a check step prints its end only, naming each check: an asset's checks take a fraction of a
second each). The lines are not wrapped: a terminal folds a long one, a pipe keeps it whole.

:func:`stderr_to` sends the process's standard error — file descriptor 2, where the JVM of an
in-process Spark session writes its log (``WARN Utils: Your hostname, …``, ``WARN
DataSourceManager: …``) and Dagster its log lines — to a log file while the run runs, so the
console shows the steps, and the summary names the file. A JVM started during the run keeps
that file as its standard error.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape

if TYPE_CHECKING:
    from dagster import Definitions, EventLogEntry
    from rich.console import Console

#: How many asset names a step's line shows (a multi-asset's others are counted).
SHOWN_KEYS = 3


@dataclass(frozen=True)
class Step:
    """What a step materializes (or checks): its asset keys."""

    keys: tuple[str, ...]
    checks_only: bool = False


def steps_of(definitions: Definitions) -> dict[str, Step]:
    """The steps a run of ``definitions`` can have, by their op's name (a step's key)."""
    steps: dict[str, Step] = {}
    for assets in definitions.resolve_asset_graph().assets_defs:
        if not assets.is_executable:
            continue
        keys = tuple(k.to_user_string() for k in assets.keys)
        checked = tuple(dict.fromkeys(c.asset_key.to_user_string() for c in assets.check_keys))
        steps[assets.node_def.name] = Step(
            keys=keys or checked,
            checks_only=not keys,
        )
    return steps


@dataclass
class _Running:
    began: float
    partitions: set[str] = field(default_factory=set)
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


class StepLines:
    """A listener of one run's events that prints its steps' lines on ``console``."""

    def __init__(self, console: Console, steps: dict[str, Step]) -> None:
        self.console = console
        self.steps = steps
        self.began = time.monotonic()
        self.planned: dict[str, set[str]] = defaultdict(set)
        self.running: dict[str, _Running] = {}
        self.printed: list[str] = []

    def __call__(self, entry: EventLogEntry) -> None:
        try:
            self.handle(entry)
        except Exception:  # never the run's failure: the traceback goes to the log
            traceback.print_exc()

    def handle(self, entry: EventLogEntry) -> None:
        event = entry.dagster_event
        if event is None or event.step_key is None:
            return
        key = event.step_key
        kind = event.event_type_value
        if kind == "ASSET_MATERIALIZATION_PLANNED":
            partition = getattr(event.event_specific_data, "partition", None)
            if partition:
                self.planned[key].add(str(partition))
            return
        if kind == "STEP_START":
            self.running[key] = _Running(time.monotonic())
            if not self.step(key).checks_only:
                self.line("▶", self.label(key), span(self.planned.get(key, ())))
            return
        running = self.running.get(key)
        if running is None:
            return
        if kind == "ASSET_MATERIALIZATION":
            mat = event.step_materialization_data.materialization
            if mat.partition:
                running.partitions.add(str(mat.partition))
            meta = {k: v.value for k, v in mat.metadata.items()}
            running.metadata[mat.asset_key.to_user_string()] = meta
        elif kind == "ASSET_CHECK_EVALUATION":
            check = event.event_specific_data
            name = str(getattr(check, "check_name", "?"))
            if getattr(check, "passed", False):
                running.passed.append(name)
            else:
                severity = getattr(getattr(check, "severity", None), "value", "")
                running.failed.append(f"{name} ({severity})")
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE", "STEP_SKIPPED"):
            del self.running[key]
            took = f"{time.monotonic() - running.began:.2f}s"
            if kind == "STEP_SKIPPED":
                self.line("–", self.label(key), "skipped")
            elif kind == "STEP_FAILURE":
                error = event.step_failure_data.error
                message = error.message.strip().splitlines()[0] if error else "failed"
                self.line("✗", self.label(key), f"failed after {took}: {message}")
            else:
                self.line("✓", self.label(key), *self.outcome(key, running), took)

    def step(self, key: str) -> Step:
        return self.steps.get(key) or self.steps.get(key.split(".")[0]) or Step(keys=(key,))

    def label(self, key: str) -> str:
        keys = self.step(key).keys
        shown = ", ".join(keys[:SHOWN_KEYS])
        return shown + (f" +{len(keys) - SHOWN_KEYS}" if len(keys) > SHOWN_KEYS else "")

    def outcome(self, key: str, running: _Running) -> list[str]:
        """The end line's middle: an asset step's partitions and rows (+ inserted ~ updated
        - deleted, the table's rows after); the checks it evaluated, passed and not."""
        parts = [] if self.step(key).checks_only else [span(running.partitions)]
        for meta in running.metadata.values():
            changed = [
                f"{sign}{_total(meta, f'rows_{what}')}"
                for sign, what in (("+", "inserted"), ("~", "updated"), ("-", "deleted"))
            ]
            if any(k.endswith(("rows_inserted", "rows_updated", "rows_deleted")) for k in meta):
                parts.append(" ".join(changed))
            if isinstance(meta.get("dagster/row_count"), int):
                parts.append(f"{meta['dagster/row_count']} rows")
        if running.passed:
            parts.append(f"checks passed: {', '.join(running.passed)}")
        if running.failed:
            parts.append(f"not passed: {', '.join(running.failed)}")
        return parts

    def line(self, mark: str, *parts: str) -> None:
        text = "  ".join(p for p in parts if p)
        elapsed = time.monotonic() - self.began
        self.printed.append(f"{mark} {text}")
        style = {"✗": "red", "✓": "green"}.get(mark, "cyan")
        self.console.print(
            f"[dim]\\[{elapsed:6.1f}s][/] [{style}]{mark}[/] {escape(text)}", soft_wrap=True
        )


def span(partitions: Iterable[str]) -> str:
    """Partition keys as their first and last (``2024-01-01…2024-01-03``); empty for none."""
    keys = sorted(partitions)
    if not keys:
        return ""
    return keys[0] if len(keys) == 1 else f"{keys[0]}…{keys[-1]}"


def _total(meta: dict[str, Any], suffix: str) -> int:
    return sum(v for k, v in meta.items() if k.endswith(suffix) and isinstance(v, int))


@contextmanager
def stderr_to(path: Path) -> Iterator[Path]:
    """The process's file descriptor 2 (and ``sys.stderr``) writing to ``path`` (appended to)
    inside the block, then restored."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(log, 2)
        yield path
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log)


__all__ = ["SHOWN_KEYS", "Step", "StepLines", "span", "stderr_to", "steps_of"]
