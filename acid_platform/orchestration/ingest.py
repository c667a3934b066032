"""Ingest that runs by itself: a sensor watches a landing location, a job loads what lands.

* :func:`ingest_sensor` — on each tick lists the landing location (a local directory or a URI
  such as ``s3://bucket/in``, through ``pyarrow.fs``) for files matching its glob whose format
  is known (``.parquet``, ``.csv``, ``.jsonl``/``.json``, optionally compressed) or given, and
  requests one run of the ingest job per new file — or per batch of ``batch_size`` files. A
  file's identity is its URI, size and modification time (its content's digest added when a
  local file was rewritten keeping both); the run key is that identity (a
  batch's: its first file's and a digest of all), so a repeated tick requests nothing twice.
  The cursor keeps the identity of every file present that was requested (or found committed
  already); a file rewritten in place is a new file. Files already committed into the table
  (a reset cursor) are not requested again. A missing landing location: the sensor skips.
* :data:`ingest_job` — loads its files with :func:`acid_platform.streaming.landing.load_files`:
  through a streaming connection's transaction batch — one transaction per file, one
  ``delta_<minW>_<maxW>`` per partition for the whole run — each file's identity recorded in
  its own transaction, so a re-run is a no-op (``skipped``), and of two runs loading the same
  file one commits the rows. A file that does not parse, or does not fit the table, aborts
  only its transaction (nothing of it visible); the other files load, and the run then fails
  with a :class:`~dagster.Failure` naming each failed file and its error (with ``columns``
  given, a missing table is created first). The output's metadata: table, txn ids, write
  ids, rows, the files loaded, skipped and failed — also reported as the table asset's
  materialization when the run names its ``asset_key`` and loaded something.

A run that failed is not requested again (the file would fail again); fix the file (a new
identity: requested anew) or re-execute the run.
"""

# no `from __future__ import annotations`: Dagster reads the annotations of ops and sensors

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from dagster import (
    AssetKey,
    AssetMaterialization,
    Config,
    DefaultSensorStatus,
    Failure,
    JobDefinition,
    MetadataValue,
    OpExecutionContext,
    Output,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)
from pydantic import Field

from acid_platform.errors import LandingFileError, NoSuchObjectError
from acid_platform.orchestration.resources import (
    DEFAULT_RESOURCE_KEY,
    AcidWarehouseResource,
    maintenance_warehouse,
    warehouse_resource,
)
from acid_platform.orchestration.service_jobs import service_job
from acid_platform.streaming.landing import (
    LandingFile,
    LoadResult,
    ensure_table,
    format_of,
    identify,
    list_landing,
    load_files,
    stat_landing,
)

INGEST_JOB = "acid_ingest"
INGEST_SENSOR = "acid_ingest_sensor"
#: Run tags: the table loaded, how many files, the first file's name.
TABLE_TAG = "acid/table"
FILES_TAG = "acid/ingest_files"
FILE_TAG = "acid/ingest_file"
#: What fails a whole ingest run with a clear message before anything is written (a missing
#: file or table, an unknown format); a bad file's content fails only its own transaction.
BAD_INPUT = (LandingFileError, NoSuchObjectError)


class IngestConfig(Config):  # type: ignore[misc]
    """What an ingest run loads, and where."""

    table: str = Field(description="The ACID table (db.table) the files are loaded into.")
    files: list[str] = Field(description="Landing files (local paths or URIs), loaded together.")
    format: str = Field(
        default="", description="parquet, csv or json (JSON lines); empty: by each file's suffix."
    )
    columns: dict[str, str] = Field(
        default_factory=dict,
        description="If the table does not exist, create it with these columns (name: Hive "
        "type); empty: the table must exist.",
    )
    partition_columns: dict[str, str] = Field(
        default_factory=dict, description="Partition columns of a table created (name: type)."
    )
    asset_key: list[str] = Field(
        default_factory=list,
        description="The table's asset key (path): a load is reported as its materialization.",
    )
    stamps: list[str] = Field(
        default_factory=list,
        description="Each file's stamp (size:mtime_ns, :ctime_ns for a local file) when the "
        "sensor listed it (empty: not checked); "
        "a file changed since is left for the sensor to list again, not loaded half-written.",
    )


@cache
def ingest_job_for(resource_key: str = DEFAULT_RESOURCE_KEY) -> JobDefinition:
    """The ingest job of the warehouse under ``resource_key`` (one per key): loads the files
    exactly once (a no-op for files committed already)."""
    return service_job(
        INGEST_JOB,
        "acid_ingest_files",
        "ingest",
        resource_key,
        ingest_files,
        config_type=IngestConfig,
        description="Load landing files into an ACID table (config: ops.acid_ingest_files.config).",
    )


def ingest_files(
    context: OpExecutionContext, acid_warehouse: AcidWarehouseResource, config: IngestConfig
) -> Output[None]:
    """The ingest op's body (see :func:`ingest_job_for`)."""
    wh = acid_warehouse.get_warehouse()
    files, vanished, changed = still_as_listed(config)
    for uri in vanished:
        context.log.warning(f"{uri} vanished before its run: not loaded (the others are)")
    for uri in changed:
        context.log.warning(
            f"{uri} changed since it was listed: not loaded now; the sensor lists it again once "
            "it stays unchanged"
        )
    try:
        if config.columns:
            ensure_table(wh, config.table, config.columns, config.partition_columns)
        result = load_files(wh, config.table, files, fmt=config.format or None)
    except BAD_INPUT as exc:
        raise Failure(
            description=f"ingest into {config.table} failed, nothing was written: {exc}",
            metadata={
                "table": config.table,
                "files": MetadataValue.json(list(config.files)),
                "error": type(exc).__name__,
            },
        ) from exc
    metadata = ingest_metadata(result) | {
        "vanished": MetadataValue.json(vanished),
        "changed_since_listed": MetadataValue.json(changed),
    }
    if config.asset_key and result.loads:
        context.log_event(AssetMaterialization(AssetKey(config.asset_key), metadata=metadata))
    if result.loads:
        context.log.info(
            f"loaded {result.rows} row(s) from {len(result.loaded)} file(s) into {result.table} "
            f"(one transaction each: txnids {list(result.txn_ids)}, write ids "
            f"{list(result.write_ids)})"
        )
    if result.skipped:
        context.log.info(
            f"{len(result.skipped)} file(s) already committed into {result.table} (by txnids "
            f"{sorted({s.txn_id for s in result.skipped})}): skipped"
        )
    if result.failed:
        raise Failure(
            description=f"ingest into {result.table}: {len(result.failed)} file(s) failed, "
            "their transactions aborted and nothing of them written ("
            f"{len(result.loads)} other file(s) loaded): "
            + "; ".join(str(f) for f in result.failed),
            metadata=metadata,
        )
    return Output(None, metadata=metadata)


#: The default warehouse's ingest job.
ingest_job = ingest_job_for()


def still_as_listed(config: IngestConfig) -> tuple[list[LandingFile], list[str], list[str]]:
    """The run's files as they are now, those that vanished, and those that changed since the
    sensor listed them (by their ``stamps``): only the first are loaded."""
    present, vanished, changed = [], [], []
    stamps = list(config.stamps) or [""] * len(config.files)
    for uri, listed in zip(config.files, stamps, strict=True):
        try:
            file = stat_landing(uri)
        except LandingFileError:
            vanished.append(uri)
            continue
        if listed and file.stamp != listed:
            changed.append(uri)
        else:
            present.append(file)
    return present, vanished, changed


def ingest_metadata(result: LoadResult) -> dict[str, Any]:
    """Output metadata of one ingest run."""
    return {
        "table": result.table,
        "skipped": result.is_noop,
        "rows": result.rows,
        "txn_ids": MetadataValue.json(list(result.txn_ids)),
        "write_ids": MetadataValue.json(list(result.write_ids)),
        "files_loaded": MetadataValue.json([f.uri for f in result.loaded]),
        "sources": MetadataValue.json([f.key for f in result.loaded]),
        "already_committed": MetadataValue.json(
            [{"source": s.key, "txn_id": s.txn_id, "write_id": s.write_id} for s in result.skipped]
        ),
        "failed": MetadataValue.json(
            [{"file": f.file.uri, "error": f.error, "message": f.message} for f in result.failed]
        ),
        "dirs_written": MetadataValue.json(list(result.dirs_written)),
        "bytes_written": result.bytes_written,
    }


# --------------------------------------------------------------------------- the sensor


@dataclass
class IngestCursor:
    """The sensor's memory: the :attr:`~LandingFile.stamp` of each landing file (by URI) requested or found
    loaded, among those present at the last tick; and of each new file not stable yet, how
    many listings in a row have seen it unchanged (``pending``)."""

    seen: dict[str, str] = field(default_factory=dict)
    pending: dict[str, tuple[str, int]] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str | None) -> "IngestCursor":
        if not text:
            return cls()
        data = json.loads(text)
        pending = {str(k): (str(v[0]), int(v[1])) for k, v in data.get("pending", {}).items()}
        return cls({str(k): str(v) for k, v in data.get("seen", {}).items()}, pending)

    def dump(self) -> str:
        pending = {k: list(v) for k, v in sorted(self.pending.items())}
        return json.dumps({"seen": dict(sorted(self.seen.items())), "pending": pending})

    def listings(self, file: LandingFile) -> int:
        """How many listings in a row, this one included, have seen ``file`` as it is now."""
        before = self.pending.get(file.uri)
        return before[1] + 1 if before is not None and before[0] == file.stamp else 1

    def is_new(self, file: LandingFile) -> bool:
        return self.seen.get(file.uri) != file.stamp


def batch_key(files: Sequence[LandingFile]) -> str:
    """The run key of a batch: a single file's identity, else the first's, how many more and a
    digest of all their identities."""
    if len(files) == 1:
        return files[0].key
    digest = hashlib.sha256("\n".join(f.key for f in files).encode()).hexdigest()[:16]
    return f"{files[0].key}+{len(files) - 1}:{digest}"


@dataclass(frozen=True)
class IngestTarget:
    """What a sensor's runs load into, and how (the run config's part beside the files)."""

    table: str
    format: str = ""
    columns: Mapping[str, str] = field(default_factory=dict)
    partition_columns: Mapping[str, str] = field(default_factory=dict)
    asset_key: AssetKey | None = None

    def request(self, files: Sequence[LandingFile]) -> RunRequest:
        """The run request loading ``files``."""
        config = {
            "table": self.table,
            "files": [f.uri for f in files],
            "format": self.format,
            "columns": dict(self.columns),
            "partition_columns": dict(self.partition_columns),
            "asset_key": list(self.asset_key.path) if self.asset_key else [],
            "stamps": [f.stamp for f in files],
        }
        return RunRequest(
            run_key=batch_key(files),
            run_config={"ops": {"acid_ingest_files": {"config": config}}},
            tags={TABLE_TAG: self.table, FILES_TAG: str(len(files)), FILE_TAG: files[0].name},
        )


def plan_ingest(
    files: Sequence[LandingFile],
    cursor: IngestCursor,
    committed: set[str],
    *,
    batch_size: int = 1,
    max_runs: int = 100,
    stable_listings: int = 1,
) -> tuple[list[list[LandingFile]], list[LandingFile], IngestCursor]:
    """The batches to request for the new ``files`` (not in ``cursor``, not ``committed``:
    keys) that ``stable_listings`` listings in a row saw unchanged, at most ``max_runs``; the
    new files found committed already; the cursor after."""
    new = [f for f in files if cursor.is_new(f)]
    loaded = [f for f in new if f.key in committed]
    candidates = [f for f in new if f.key not in committed]
    todo = [f for f in candidates if cursor.listings(f) >= stable_listings]
    size = max(batch_size, 1)
    batches = [todo[i : i + size] for i in range(0, len(todo), size)][: max(max_runs, 0)]
    requested = {f.uri for batch in batches for f in batch}
    waiting = [f for f in candidates if f.uri not in requested]
    seen = {f.uri: f.stamp for f in files if f.uri not in {w.uri for w in waiting}}
    pending = {f.uri: (f.stamp, cursor.listings(f)) for f in waiting}
    return batches, loaded, IngestCursor(seen, pending)


def ingest_sensor(
    landing: str,
    table: str,
    *,
    name: str = INGEST_SENSOR,
    pattern: str = "*",
    recursive: bool = False,
    file_format: str = "",
    batch_size: int = 1,
    max_runs_per_tick: int = 100,
    columns: Mapping[str, str] | None = None,
    partition_columns: Mapping[str, str] | None = None,
    asset_key: AssetKey | None = None,
    minimum_interval_seconds: int = 30,
    default_status: DefaultSensorStatus = DefaultSensorStatus.RUNNING,
    job_def: JobDefinition | None = None,
    resource_key: str = DEFAULT_RESOURCE_KEY,
    stable_listings: int = 2,
) -> SensorDefinition:
    """A sensor loading what lands in ``landing`` (matching the glob ``pattern``, relative to
    it) into ``table`` (see module docs); RUNNING by default. ``file_format``: the files'
    format (default: by suffix; files whose suffix says none are ignored). ``columns`` /
    ``partition_columns``: create the table on the first load if it does not exist.
    ``asset_key``: the table's asset, whose materialization each load reports.
    ``resource_key``: the warehouse (default job: its ingest job). ``stable_listings``: a new
    file is requested only once that many ticks in a row saw it with the same size,
    modification and (local files) status change time (a file still being written is not
    loaded half-written; 1: at once).
    Complete files are best written under a name starting with ``.`` or ``_`` and renamed
    when complete: a rename is atomic, a listing never sees a half-written file."""
    target = IngestTarget(
        table, file_format, dict(columns or {}), dict(partition_columns or {}), asset_key
    )

    @sensor(
        name=name,
        job=job_def or ingest_job_for(resource_key),
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        required_resource_keys={resource_key},
        description=f"Loads new files of {landing} ({pattern}) into {table}, each exactly once "
        "(one run per file or batch; run key = the file's URI, size and modification time).",
    )
    def _ingest_sensor(context: SensorEvaluationContext, **_: Any) -> SensorResult:
        acid_warehouse = warehouse_resource(context, resource_key)
        cursor = IngestCursor.parse(context.cursor)
        refused: list[str] = []
        listed = list_landing(landing, pattern, recursive=recursive, refused=refused)
        if listed is None:
            return SensorResult(
                skip_reason=f"landing location {landing} does not exist", cursor=cursor.dump()
            )
        for link in refused:
            context.log.warning(f"not loaded: a symbolic link leading out: {link}")
        files = [f for f in listed if file_format or format_of(f.name) is not None]
        fresh = [f for f in files if cursor.is_new(f)]
        committed: set[str] = set()
        if fresh:
            identified, committed = identify_new(acid_warehouse, table, fresh)
            as_loaded = {f.uri: f for f in identified}
            files = [as_loaded.get(f.uri, f) for f in files]
        batches, loaded, after = plan_ingest(
            files,
            cursor,
            committed,
            batch_size=batch_size,
            max_runs=max_runs_per_tick,
            stable_listings=stable_listings,
        )
        if loaded:
            context.log.info(f"{len(loaded)} new file(s) are committed into {table} already")
        if batches:
            return SensorResult(
                run_requests=[target.request(b) for b in batches], cursor=after.dump()
            )
        waiting = f", {len(after.pending)} waiting to be unchanged" if after.pending else ""
        return SensorResult(
            skip_reason=f"no new file in {landing} ({len(files)} seen, "
            f"{len(loaded)} found loaded already{waiting})",
            cursor=after.dump(),
        )

    return _ingest_sensor


def identify_new(
    resource: AcidWarehouseResource, table: str, files: Sequence[LandingFile]
) -> tuple[list[LandingFile], set[str]]:
    """``files`` under the identities they load with (a rewrite that kept its size and time
    names its content: :func:`~acid_platform.streaming.landing.identify`), and the keys of
    those committed into ``table`` already (none while the warehouse or table does not
    exist)."""
    try:
        with maintenance_warehouse(resource) as wh:
            pending, _ = identify(wh.table(table), files)
    except NoSuchObjectError:
        return list(files), set()
    loads = {f.uri: f for f in pending}
    return [loads.get(f.uri, f) for f in files], {f.key for f in files if f.uri not in loads}


__all__ = [
    "BAD_INPUT",
    "FILES_TAG",
    "FILE_TAG",
    "INGEST_JOB",
    "INGEST_SENSOR",
    "TABLE_TAG",
    "IngestConfig",
    "IngestCursor",
    "IngestTarget",
    "batch_key",
    "identify_new",
    "ingest_files",
    "ingest_job",
    "ingest_job_for",
    "ingest_metadata",
    "still_as_listed",
    "ingest_sensor",
    "plan_ingest",
]
