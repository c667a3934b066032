"""sqlglot ASTs (Hive dialect) to :mod:`acid_platform.sql.statements` values.

One function per statement kind. Clauses the project cannot honour are refused here with
:class:`UnsupportedOperationError`, so a script fails before any of it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

from acid_platform.errors import SemanticError, UnsupportedOperationError
from acid_platform.format.types import normalize_hive_type
from acid_platform.sql.statements import (
    AlterTable,
    ColumnSpec,
    CreateDatabase,
    CreateTable,
    Delete,
    Describe,
    DropDatabase,
    DropTable,
    Insert,
    Merge,
    Select,
    SqlSource,
    Statement,
    TableName,
    Truncate,
    Update,
    UseDatabase,
    WhenClause,
)


def translate(node: exp.Expr, source: SqlSource) -> Statement:
    """The statement for a parsed sqlglot expression; unknown kinds are unsupported."""
    for kind, handler in _HANDLERS:
        if isinstance(node, kind):
            return handler(node, source)
    if isinstance(node, exp.Query):
        return Select(node, source=source)
    raise unsupported(source, f"{source.text.split()[0].upper()} statements are not supported")


def unsupported(source: SqlSource, message: str) -> UnsupportedOperationError:
    """An UnsupportedOperationError naming where the statement starts."""
    return UnsupportedOperationError(f"line {source.line}: {message}")


def table_name(node: exp.Expr) -> TableName:
    """TableName of an ``exp.Table`` (``db.name``; a catalog part is refused)."""
    if not isinstance(node, exp.Table) or not node.name:
        raise SemanticError(f"expected a table name, found {node.sql(dialect='hive')!r}")
    if node.catalog:
        raise SemanticError(
            f"table name {node.sql(dialect='hive')!r} has too many parts (db.table at most)"
        )
    return TableName(node.name.lower(), node.db.lower() if node.db else None)


def hive_type(kind: exp.Expr | None, column: str) -> str:
    """Canonical Hive type text of a column definition's DataType."""
    if kind is None:
        raise SemanticError(f"column {column!r} has no type")
    return normalize_hive_type(kind.sql(dialect="hive"))


# --------------------------------------------------------------------------- DDL
def _create(node: exp.Create, source: SqlSource) -> Statement:
    kind = (node.args.get("kind") or "").upper()
    if kind in ("DATABASE", "SCHEMA"):
        target = node.this
        name = target.name or (target.db if isinstance(target, exp.Table) else "")
        return CreateDatabase(name.lower(), bool(node.args.get("exists")), source=source)
    if kind != "TABLE":
        raise unsupported(source, f"CREATE {kind} is not supported")
    return _create_table(node, source)


def _create_table(node: exp.Create, source: SqlSource) -> Statement:
    schema = node.this
    columns: tuple[ColumnSpec, ...] = ()
    if isinstance(schema, exp.Schema):
        columns = tuple(_column(c) for c in schema.expressions)
        target = table_name(schema.this)
    else:
        target = table_name(schema)
    fields: dict[str, object] = {}
    properties: list[tuple[str, str]] = []
    for prop in (node.args.get("properties") or exp.Properties(expressions=[])).expressions:
        _table_property(prop, fields, properties, source)
    query = node.expression if isinstance(node.expression, exp.Query) else None
    if query is not None and fields.get("partition_columns"):
        raise unsupported(
            source,
            "CREATE TABLE … PARTITIONED BY … AS SELECT is not supported; create the table, then INSERT",
        )
    return CreateTable(
        target,
        columns,
        properties=tuple(properties),
        if_not_exists=bool(node.args.get("exists")),
        query=query,
        source=source,
        **fields,  # type: ignore[arg-type]
    )


def _column(node: exp.Expr) -> ColumnSpec:
    if not isinstance(node, exp.ColumnDef):
        raise SemanticError(
            f"unsupported table element {node.sql(dialect='hive')!r} (only columns)"
        )
    name = node.name.lower()
    not_null, comment = False, None
    for constraint in node.constraints:
        kind = constraint.kind
        if isinstance(kind, exp.NotNullColumnConstraint) and not kind.args.get("allow_null"):
            not_null = True
        elif isinstance(kind, exp.CommentColumnConstraint):
            comment = (
                kind.this.name if isinstance(kind.this, exp.Literal) else kind.sql(dialect="hive")
            )
        else:
            raise UnsupportedOperationError(
                f"column {name!r}: constraint {constraint.sql(dialect='hive')!r} is not supported (NOT NULL and COMMENT are)"
            )
    return ColumnSpec(name, hive_type(node.args.get("kind"), name), not_null, comment)


def _table_property(
    prop: exp.Expr, fields: dict[str, object], properties: list[tuple[str, str]], source: SqlSource
) -> None:
    if isinstance(prop, exp.PartitionedByProperty):
        parts = prop.this.expressions if isinstance(prop.this, exp.Schema) else []
        if not parts or not all(isinstance(p, exp.ColumnDef) and p.args.get("kind") for p in parts):
            raise SemanticError(
                f"line {source.line}: PARTITIONED BY needs typed columns: (p string, …)"
            )
        fields["partition_columns"] = tuple(_column(p) for p in parts)
    elif isinstance(prop, exp.ClusteredByProperty):
        fields["bucket_columns"] = tuple(c.name.lower() for c in prop.expressions)
        fields["sorted_by"] = tuple(o.this.name.lower() for o in prop.args.get("sorted_by") or [])
        fields["num_buckets"] = int(prop.args["buckets"].name)
    elif isinstance(prop, exp.FileFormatProperty):
        inner = prop.this
        fields["stored_as"] = (
            inner.name.lower() if isinstance(inner, exp.Var) else inner.sql(dialect="hive")
        )
    elif isinstance(prop, exp.LocationProperty):
        fields["location"] = prop.this.name
    elif isinstance(
        prop, (exp.RowFormatDelimitedProperty, exp.RowFormatSerdeProperty, exp.SerdeProperties)
    ):
        fields["row_format"] = True
    elif isinstance(prop, exp.TemporaryProperty):
        fields["temporary"] = True
    elif isinstance(prop, exp.ExternalProperty):
        fields["external"] = True
    elif isinstance(prop, exp.LikeProperty):
        fields["like"] = table_name(prop.this)
    elif isinstance(prop, exp.SchemaCommentProperty):
        pass  # a table comment carries no meaning for the data
    elif type(prop) is exp.Property:  # TBLPROPERTIES ('k'='v'); subclasses are the clauses above
        properties.append((_property_text(prop.this), _property_text(prop.args.get("value"))))
    else:
        raise unsupported(
            source, f"CREATE TABLE clause {prop.sql(dialect='hive')!r} is not supported"
        )


def _property_text(node: exp.Expr | None) -> str:
    if node is None:
        return ""
    if isinstance(node, (exp.Literal, exp.Identifier, exp.Var)):
        return str(node.this)
    return node.sql(dialect="hive")


def _drop(node: exp.Drop, source: SqlSource) -> Statement:
    kind = (node.args.get("kind") or "").upper()
    exists = bool(node.args.get("exists"))
    tables = node.args.get("tables") or ([node.this] if node.this else [])
    if kind in ("DATABASE", "SCHEMA"):
        target = tables[0]
        name = target.name or target.db
        return DropDatabase(name.lower(), exists, bool(node.args.get("cascade")), source=source)
    if kind != "TABLE":
        raise unsupported(source, f"DROP {kind} is not supported")
    if len(tables) != 1:
        raise SemanticError(f"line {source.line}: DROP TABLE takes one table")
    return DropTable(table_name(tables[0]), exists, source=source)


def _use(node: exp.Use, source: SqlSource) -> Statement:
    return UseDatabase(node.this.name.lower(), source=source)


def _describe(node: exp.Describe, source: SqlSource) -> Statement:
    style = node.args.get("style")
    return Describe(table_name(node.this), str(style).lower() if style else None, source=source)


def _alter(node: exp.Alter, source: SqlSource) -> Statement:
    found = node.args.get("actions") or []
    actions = ", ".join(a.sql(dialect="hive") for a in found)
    partition = node.this.args.get("partition")
    location = None
    if len(found) == 1 and isinstance(found[0], exp.AlterSet):
        literal = found[0].args.get("location")
        if isinstance(literal, exp.Literal) and literal.is_string:
            location = literal.name
    return AlterTable(
        table_name(node.this),
        actions,
        partition=None if partition is None else partition.sql(dialect="hive"),
        location=location,
        source=source,
    )


# --------------------------------------------------------------------------- DML
def _insert(node: exp.Insert, source: SqlSource) -> Statement:
    target = node.this
    columns: tuple[str, ...] | None = None
    if isinstance(target, exp.Schema):
        columns = tuple(i.name.lower() for i in target.expressions)
        target = target.this
    name = table_name(target)
    static: list[tuple[str, object]] = []
    dynamic: list[str] = []
    partition = target.args.get("partition") or node.args.get("partition")
    if isinstance(partition, exp.Partition):
        for item in partition.expressions:
            if isinstance(item, exp.EQ):
                static.append(
                    (item.this.name.lower(), literal_value(item.expression, "partition value"))
                )
            elif isinstance(item, exp.Column):
                dynamic.append(item.name.lower())
            else:
                raise SemanticError(
                    f"line {source.line}: bad PARTITION item {item.sql(dialect='hive')!r}"
                )
    query = as_query(node.expression, source)
    with_ = node.args.get("with_")
    if with_ is not None:
        query = query.copy()
        query.set("with_", with_.copy())
    return Insert(
        name,
        query,
        columns,
        tuple(static),
        tuple(dynamic),
        bool(node.args.get("overwrite")),
        isinstance(partition, exp.Partition),
        source=source,
    )


def as_query(node: exp.Expr | None, source: SqlSource) -> exp.Query:
    """The row source of an INSERT as a query (VALUES become ``SELECT * FROM (VALUES …)``)."""
    if isinstance(node, exp.Values):
        return exp.select("*").from_(node.copy().as_("_values"))
    if isinstance(node, exp.Query):
        return node
    raise unsupported(source, "INSERT needs VALUES or a SELECT")


def literal_value(node: exp.Expr, what: str) -> object:
    """The Python value of a constant (string, number, boolean, negative number)."""
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        text = node.this
        return int(text) if text.lstrip("-").isdigit() else float(text)
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        value = literal_value(node.this, what)
        return -value  # type: ignore[operator]
    raise SemanticError(f"{what} must be a constant, found {node.sql(dialect='hive')!r}")


def _update(node: exp.Update, source: SqlSource) -> Statement:
    if node.args.get("from_") or node.args.get("from"):
        raise unsupported(source, "UPDATE … FROM is not HiveQL; use MERGE")
    return Update(
        table_name(node.this),
        tuple(_assignment(a) for a in node.expressions),
        _where(node),
        source=source,
    )


def _assignment(node: exp.Expr) -> tuple[str, exp.Expr]:
    if not isinstance(node, exp.EQ) or not isinstance(node.this, exp.Column):
        raise SemanticError(
            f"expected column = expression in SET, found {node.sql(dialect='hive')!r}"
        )
    return node.this.name.lower(), node.expression


def _where(node: exp.Expr) -> exp.Expr | None:
    where = node.args.get("where")
    return where.this if isinstance(where, exp.Where) else None


def _delete(node: exp.Delete, source: SqlSource) -> Statement:
    if node.args.get("using"):
        raise unsupported(
            source, "DELETE … USING is not HiveQL; use MERGE … WHEN MATCHED THEN DELETE"
        )
    return Delete(table_name(node.this), _where(node), source=source)


def _truncate(node: exp.TruncateTable, source: SqlSource) -> Statement:
    tables = node.expressions
    if len(tables) != 1 or node.args.get("is_database"):
        raise SemanticError(f"line {source.line}: TRUNCATE TABLE takes one table")
    partition: list[tuple[str, object]] = []
    spec = node.args.get("partition")
    for item in spec.expressions if isinstance(spec, exp.Partition) else []:
        if not isinstance(item, exp.EQ):
            raise SemanticError(f"line {source.line}: TRUNCATE … PARTITION needs p=value items")
        partition.append(
            (item.this.name.lower(), literal_value(item.expression, "partition value"))
        )
    return Truncate(table_name(tables[0]), tuple(partition), source=source)


def _merge(node: exp.Merge, source: SqlSource) -> Statement:
    target = node.this
    target_name = table_name(target)
    target_alias = (target.alias or target_name.name).lower()
    using = node.args["using"]
    src: TableName | exp.Query
    if isinstance(using, exp.Table):
        src = table_name(using)
        source_alias = (using.alias or src.name).lower()
    elif isinstance(using, exp.Subquery) and isinstance(using.this, exp.Query):
        if not using.alias:
            raise SemanticError(
                f"line {source.line}: a MERGE source query needs an alias: USING (…) AS s"
            )
        src = using.this
        source_alias = using.alias.lower()
    else:
        raise SemanticError(f"line {source.line}: MERGE USING needs a table or (query) AS alias")
    whens = node.args.get("whens")
    clauses = tuple(_when(w, source) for w in (whens.expressions if whens else []))
    if not clauses:
        raise SemanticError(f"line {source.line}: MERGE needs at least one WHEN clause")
    return Merge(
        target_name, target_alias, src, source_alias, node.args["on"], clauses, source=source
    )


def _when(node: exp.When, source: SqlSource) -> WhenClause:
    matched = bool(node.args.get("matched"))
    by_source = bool(node.args.get("source"))
    condition = node.args.get("condition")
    then = node.args.get("then")
    if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
        return WhenClause("delete", matched, by_source, condition)
    if isinstance(then, exp.Update):
        if not then.expressions:
            raise unsupported(source, "UPDATE SET * is not HiveQL; list the columns")
        return WhenClause(
            "update", matched, by_source, condition, tuple(_assignment(a) for a in then.expressions)
        )
    if isinstance(then, exp.Insert):
        values = then.args.get("expression")
        if not isinstance(values, exp.Tuple):
            raise unsupported(source, "INSERT * is not HiveQL; write INSERT VALUES (…)")
        columns = then.this
        names = (
            tuple(c.name.lower() for c in columns.expressions)
            if isinstance(columns, exp.Tuple)
            else None
        )
        return WhenClause(
            "insert",
            matched,
            by_source,
            condition,
            insert_columns=names,
            insert_values=tuple(values.expressions),
        )
    raise unsupported(
        source, f"MERGE action {then.sql(dialect='hive') if then else ''!r} is not supported"
    )


_HANDLERS: tuple[tuple[type[exp.Expr], Callable[[Any, SqlSource], Statement]], ...] = (
    (exp.Create, _create),
    (exp.Drop, _drop),
    (exp.Use, _use),
    (exp.Describe, _describe),
    (exp.Alter, _alter),
    (exp.Insert, _insert),
    (exp.Update, _update),
    (exp.Delete, _delete),
    (exp.TruncateTable, _truncate),
    (exp.Merge, _merge),
)
