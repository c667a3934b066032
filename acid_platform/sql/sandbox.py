"""What a HiveQL statement may call: the allow-list checked before any engine sees a statement.

HiveQL reads the warehouse's tables, nothing else. :func:`check_calls` walks a parsed statement
(every clause: SELECT, INSERT … SELECT, CTAS, MERGE, UPDATE, DELETE) and refuses, with a
:class:`~acid_platform.errors.SandboxError` naming the call:

* a table function in ``FROM`` or ``JOIN`` (``read_text('/etc/passwd')``, ``read_csv(…)``,
  ``sqlite_scan(…)``, ``query(…)``, ``duckdb_settings()``, ``range(…)`` …): a ``FROM`` item is
  a table (or a CTE), a sub-query, ``VALUES``, or one of Hive's UDTFs (:data:`HIVE_UDTFS`);
* a ``LATERAL VIEW`` of anything but one of Hive's UDTFs;
* ``SELECT TRANSFORM … USING 'script'``, and Hive's functions that reach outside
  (``in_file``, ``reflect``, ``java_method``);
* a call of a function Hive does not have (:data:`HIVE_FUNCTIONS`), and of the non-Hive
  functions sqlglot knows by name (``read_csv``, ``read_parquet``, ``unnest``) wherever they
  appear.

Functions sqlglot models (``substr``, ``coalesce``, ``date_add`` …) are Hive's or standard SQL's
and are computed by the engine. The embedded engine is also sandboxed itself (no file, network or
extension access; settings locked): this list is what gives the user a clear error first.

>>> import sqlglot
>>> check_calls(sqlglot.parse_one("select upper(s) from t", read="hive"))
>>> check_calls(sqlglot.parse_one("select * from read_text('/etc/passwd')", read="hive"))
Traceback (most recent call last):
...
acid_platform.errors.SandboxError: table function read_text(…) is not allowed: FROM reads the warehouse's tables only (a table, a CTE, a sub-query, VALUES or a Hive UDTF)
"""

from __future__ import annotations

from sqlglot import exp

from acid_platform.errors import SandboxError

#: Hive's table-generating functions, allowed in ``LATERAL VIEW`` and in ``FROM``.
HIVE_UDTFS = frozenset(
    {
        "explode",
        "explode_outer",
        "posexplode",
        "posexplode_outer",
        "inline",
        "inline_outer",
        "stack",
        "json_tuple",
        "parse_url_tuple",
    }
)
_UDTF_NODES = (exp.Explode, exp.Posexplode, exp.Inline, exp.Stack)
#: Known to sqlglot by name, not Hive's (file readers, DuckDB's UNNEST): refused anywhere.
_NOT_HIVE = (exp.ReadCSV, exp.ReadParquet, exp.Unnest)

#: Hive's built-in functions (Hive 4 ``SHOW FUNCTIONS``) that a statement may call by a name
#: sqlglot does not model. Left out on purpose: ``in_file`` (reads a server file),
#: ``reflect`` / ``reflect2`` / ``java_method`` (call Java), and Hive's internal functions.
HIVE_FUNCTIONS = HIVE_UDTFS | frozenset(
    """
    abs acos add_months aes_decrypt aes_encrypt approx_distinct array array_contains
    array_distinct array_except array_intersect array_join array_max array_min
    array_position array_remove array_slice array_union ascii asin assert_true atan avg
    base64 between bin bround cbrt ceil ceiling char_length character_length chr coalesce
    collect_list collect_set concat concat_ws context_ngrams conv corr cos count covar_pop
    covar_samp crc32 cume_dist current_catalog current_database current_date current_groups
    current_schema current_timestamp current_user date_add date_format date_sub datediff
    datetime day dayofmonth dayofweek decode degrees dense_rank div e elt encode exp
    factorial field find_in_set first_value floor floor_day floor_hour floor_minute
    floor_month floor_quarter floor_second floor_week floor_year format_number from_unixtime
    from_utc_timestamp get_json_object greatest grouping hash hex histogram_numeric hour if
    initcap instr isfalse isnotfalse isnotnull isnottrue isnull istrue lag last_day
    last_value lcase lead least length levenshtein ln locate log log10 log2 logged_in_user
    lower lpad ltrim map map_keys map_values mask mask_first_n mask_hash mask_last_n
    mask_show_first_n mask_show_last_n max md5 min minute mod month months_between
    murmur_hash named_struct negative next_day ngrams ntile nullif nvl octet_length parse_url
    percent_rank percentile percentile_approx percentile_cont percentile_disc pi pmod
    positive pow power printf quarter radians rand rank regexp regexp_extract regexp_replace
    regr_avgx regr_avgy regr_count regr_intercept regr_r2 regr_slope regr_sxx regr_sxy
    regr_syy repeat replace reverse rlike round row_number rpad rtrim second sentences sha
    sha1 sha2 shiftleft shiftright shiftrightunsigned sign signum sin size sort_array
    sort_array_by soundex space split sqrt std stddev stddev_pop stddev_samp str_to_map
    struct substr substring substring_index sum tan to_date to_epoch_milli to_unix_timestamp
    to_utc_timestamp translate trim trunc ucase unbase64 unhex unix_timestamp upper uuid
    var_pop var_samp variance version weekofyear width_bucket xpath xpath_boolean
    xpath_double xpath_float xpath_int xpath_long xpath_number xpath_short xpath_string year
    tinyint smallint int bigint float double string boolean date timestamp binary decimal
    varchar char
    """.split()  # noqa: SIM905 - a word list reads better than 260 quoted strings
)

#: Hive functions left out of :data:`HIVE_FUNCTIONS`, and why.
_REFUSED_HIVE_FUNCTIONS = {
    "in_file": "reads a file of the server",
    "reflect": "calls a Java method",
    "reflect2": "calls a Java method",
    "java_method": "calls a Java method",
}

_FROM_ITEMS = "a table, a CTE, a sub-query, VALUES or a Hive UDTF"


def check_calls(statement: exp.Expr) -> None:
    """Refuse (:class:`SandboxError`) the first call in ``statement`` HiveQL may not make."""
    for node in statement.walk():
        if isinstance(node, exp.Table):
            _check_from_item(node)
        elif isinstance(node, exp.Lateral):
            _check_lateral(node)
        elif isinstance(node, exp.Anonymous | exp.AnonymousAggFunc):
            name = node.name.lower()
            if name in _REFUSED_HIVE_FUNCTIONS:
                raise SandboxError(
                    f"function {name}(…) {_REFUSED_HIVE_FUNCTIONS[name]}: it is not allowed"
                )
            if name not in HIVE_FUNCTIONS:
                raise SandboxError(f"function {name}(…) is not a Hive function: it is not allowed")
        elif isinstance(node, exp.QueryTransform):
            raise SandboxError("SELECT TRANSFORM … USING runs a script: it is not allowed")
        elif isinstance(node, _NOT_HIVE):
            raise SandboxError(
                f"function {_call_name(node)}(…) is not a Hive function: it is not allowed"
            )


def _check_from_item(table: exp.Table) -> None:
    inner = table.this
    if inner is None or isinstance(inner, exp.Identifier):  # a name (or a database's name)
        return
    if isinstance(inner, _UDTF_NODES) or (
        isinstance(inner, exp.Anonymous) and inner.name.lower() in HIVE_UDTFS
    ):
        return
    raise SandboxError(
        f"table function {_call_name(inner)}(…) is not allowed: FROM reads the warehouse's "
        f"tables only ({_FROM_ITEMS})"
    )


def _check_lateral(lateral: exp.Lateral) -> None:
    inner = lateral.this
    if isinstance(inner, (exp.Subquery, *_UDTF_NODES)):
        return
    if isinstance(inner, exp.Anonymous) and inner.name.lower() in HIVE_UDTFS:
        return
    raise SandboxError(
        f"LATERAL VIEW {_call_name(inner)}(…) is not allowed: LATERAL VIEW takes a Hive UDTF "
        f"({', '.join(sorted(HIVE_UDTFS))})"
    )


def _call_name(node: exp.Expr | None) -> str:
    if node is None:
        return "?"
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return node.sql(dialect="hive")[:40]


__all__ = ["HIVE_FUNCTIONS", "HIVE_UDTFS", "check_calls"]
