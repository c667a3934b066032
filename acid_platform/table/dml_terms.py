"""The vocabulary of the one DML plan (:mod:`.dml`): relation and column names, actions, WHEN
clauses, and the forms of MERGE's cardinality check. Engines and the plan's readers use these
names; :mod:`.dml` re-exports them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from sqlglot import exp

from acid_platform.table.deprecation import deprecated

TARGET_RELATION = "target"
SOURCE_RELATION = "source"
WRITE_ID = "__acid_writeid"
BUCKET_ID = "__acid_bucketid"
ROW_ID = "__acid_rowid"
ROW_ID_COLUMNS = (WRITE_ID, BUCKET_ID, ROW_ID)
ACTION = "__acid_action"
STATEMENT = "__acid_stmt"
VIOLATION = "__acid_violation"
BRANCH = "__acid_branch"
PRESENT = "__acid_s_present"
MATCHES = "__acid_matches"
COUNTS = "__acid_m"


class Action(enum.StrEnum):
    """What a branch does to the rows it selects."""

    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"


class MatchCount(enum.StrEnum):
    """How a MERGE plan counts the source rows each target row matches (the cardinality check).

    Both forms give the same ``__acid_matches`` for every matched target row; the engine picks
    the one that suits how it holds the target:

    * ``JOIN`` — ``GROUP BY ROW__ID`` over a second, narrow ``target JOIN source``, joined back:
      cheap when the target is already in memory (the embedded engine), as the wide join is
      never sorted;
    * ``WINDOW`` — ``count(…) OVER (PARTITION BY ROW__ID)`` over the one join: the target is
      read once (Spark, where reading it is the cost and the joined rows are few).
    """

    JOIN = "join"
    WINDOW = "window"


class ClauseKind(enum.StrEnum):
    """The WHEN clauses of MERGE (UPDATE/DELETE statements are ``MATCHED_*`` without a source)."""

    MATCHED_UPDATE = "when matched update"
    MATCHED_DELETE = "when matched delete"
    NOT_MATCHED_INSERT = "when not matched insert"
    BY_SOURCE_UPDATE = "when not matched by source update"
    BY_SOURCE_DELETE = "when not matched by source delete"

    @property
    def action(self) -> Action:
        """The action of the branch's output rows."""
        if self in (ClauseKind.MATCHED_UPDATE, ClauseKind.BY_SOURCE_UPDATE):
            return Action.UPDATE
        if self is ClauseKind.NOT_MATCHED_INSERT:
            return Action.INSERT
        return Action.DELETE


@dataclass(frozen=True)
class Clause:
    """One WHEN branch: its kind, optional extra predicate (``where``: a MERGE clause's
    ``AND <condition>``, an UPDATE's or DELETE's WHERE) and assignments (column -> value).

    The predicate is SQL text or a sqlglot syntax tree; values are SQL text, syntax trees,
    :class:`~acid_platform.table.expressions.Literal` or Python values (see
    :func:`~acid_platform.table.expressions.to_expression`). ``Table`` and ``TableMerger`` hand
    the planner trees, parsed once when the statement starts.
    """

    kind: ClauseKind
    where: str | exp.Expr | None = None
    values: tuple[tuple[str, object], ...] = ()

    @property
    def condition(self) -> str | exp.Expr | None:
        """Deprecated alias of :attr:`where` (removed in the next release)."""
        deprecated("Clause.condition", "Clause.where")
        return self.where
