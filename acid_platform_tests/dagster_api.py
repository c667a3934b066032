"""What a test asks a running Dagster webserver, over its GraphQL API (the API the UI uses):
launch a job, read runs and their output metadata, asset materializations and their metadata,
asset check results, sensor and schedule ticks, whether the code locations have loaded.

Launching goes through ``dagster_graphql.DagsterGraphQLClient``; everything else is a plain
GraphQL query (``DagsterApi.query``), so a failed assertion can show what the server said.
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from dagster_graphql import DagsterGraphQLClient

#: The code location ``workspace.yaml`` serves, and the repository name of a ``Definitions``.
LOCATION = "acid_platform"
REPOSITORY = "__repository__"
FINISHED = ("SUCCESS", "FAILURE", "CANCELED")

ENTRY = """
fragment Entry on MetadataEntry {
  __typename label
  ... on IntMetadataEntry { intValue }
  ... on FloatMetadataEntry { floatValue }
  ... on BoolMetadataEntry { boolValue }
  ... on TextMetadataEntry { text }
  ... on PathMetadataEntry { path }
  ... on JsonMetadataEntry { jsonString }
}
"""
RUN_FIELDS = "runId jobName status startTime endTime tags { key value }"
TICK_FIELDS = "status timestamp runIds runKeys skipReason error { message }"


class DagsterApiError(RuntimeError):
    """GraphQL answered with errors (or with a ``PythonError``)."""


class CodeLocationError(RuntimeError):
    """A code location failed to load: waiting longer will not help."""


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    job: str
    status: str
    tags: dict[str, str]
    start: float | None = None
    end: float | None = None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


@dataclass(frozen=True)
class Tick:
    status: str
    timestamp: float
    run_ids: list[str]
    run_keys: list[str] = field(default_factory=list)
    skip_reason: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class CheckExecution:
    """One execution of an asset check: the run, its status and the evaluation's severity."""

    run_id: str
    status: str
    severity: str | None
    description: str | None


@dataclass(frozen=True)
class CheckResult:
    """The latest execution of an asset check."""

    name: str
    blocking: bool
    status: str | None  # SUCCEEDED, FAILED, … (None: never executed)
    severity: str | None = None  # ERROR or WARN
    description: str | None = None


def entry_value(entry: dict[str, Any]) -> Any:
    """The value of a metadata entry (``Entry`` fragment), as Python."""
    kind = entry["__typename"]
    if kind == "JsonMetadataEntry":
        return json.loads(entry["jsonString"])
    for name in ("intValue", "floatValue", "boolValue", "text", "path"):
        if name in entry:
            return entry[name]
    return kind  # tables, schemas…: only the kind


def entries(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {e["label"]: entry_value(e) for e in items}


class DagsterApi:
    """The GraphQL API of the webserver at ``url`` (``http://127.0.0.1:3000``)."""

    def __init__(self, url: str, location: str = LOCATION) -> None:
        self.url = url.rstrip("/")
        self.location = location

    def query(self, text: str, timeout_s: float = 30.0, **variables: Any) -> dict[str, Any]:
        """``data`` of a GraphQL query; :class:`DagsterApiError` on errors."""
        body = json.dumps({"query": text, "variables": variables}).encode()
        request = urllib.request.Request(
            f"{self.url}/graphql", body, {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            answer = json.loads(response.read())
        if answer.get("errors"):
            raise DagsterApiError(json.dumps(answer["errors"])[:2000])
        data: dict[str, Any] = answer["data"]
        return data

    def _one(self, data: dict[str, Any], key: str) -> dict[str, Any]:
        value: dict[str, Any] | None = data.get(key)
        if value is None or str(value.get("__typename", "")).endswith("Error"):
            raise DagsterApiError(f"{key}: {value}")
        return value

    # ------------------------------------------------------------------ the server

    def locations_loaded(self) -> bool:
        """Whether every code location has loaded (:class:`CodeLocationError` if one failed)."""
        data = self.query(
            """{ workspaceOrError { __typename ... on Workspace { locationEntries {
                 name loadStatus locationOrLoadError { __typename
                 ... on PythonError { message } } } } } }"""
        )
        locations = self._one(data, "workspaceOrError").get("locationEntries") or []
        for entry in locations:
            error = entry["locationOrLoadError"] or {}
            if error.get("__typename") == "PythonError":
                raise CodeLocationError(f"{entry['name']}: {error['message']}")
        return bool(locations) and all(
            e["loadStatus"] == "LOADED" and e["locationOrLoadError"] for e in locations
        )

    # ------------------------------------------------------------------ runs

    def launch(
        self,
        job: str,
        run_config: dict[str, Any] | None = None,
        tags: dict[str, str] | None = None,
    ) -> str:
        """Launch (queue) a run of ``job``; its run id."""
        where = urlsplit(self.url)
        client = DagsterGraphQLClient(where.hostname or "127.0.0.1", port_number=where.port)
        return client.submit_job_execution(
            job,
            repository_location_name=self.location,
            repository_name=REPOSITORY,
            run_config=run_config or {},
            tags=tags,
        )

    def run(self, run_id: str) -> RunInfo:
        data = self.query(
            f"query($id: ID!) {{ runOrError(runId: $id) {{ __typename ... on Run {{ {RUN_FIELDS} }}"
            " ... on PythonError { message } } }",
            id=run_id,
        )
        return _run_info(self._one(data, "runOrError"))

    def runs(
        self, job: str | None = None, tags: dict[str, str] | None = None, limit: int = 100
    ) -> list[RunInfo]:
        """Runs, newest first, of ``job`` and with all of ``tags``."""
        run_filter: dict[str, Any] = {}
        if job:
            run_filter["pipelineName"] = job
        if tags:
            run_filter["tags"] = [{"key": k, "value": v} for k, v in tags.items()]
        data = self.query(
            f"""query($filter: RunsFilter, $limit: Int) {{ runsOrError(filter: $filter,
                limit: $limit) {{ __typename ... on Runs {{ results {{ {RUN_FIELDS} }} }}
                ... on PythonError {{ message }} }} }}""",
            filter=run_filter,
            limit=limit,
        )
        return [_run_info(r) for r in self._one(data, "runsOrError")["results"]]

    def output_metadata(self, run_id: str) -> dict[str, dict[str, Any]]:
        """The metadata of each step output of a run: ``{step key: {label: value}}``."""
        data = self.query(
            ENTRY
            + """query($id: ID!) { logsForRun(runId: $id, limit: 10000) { __typename
                 ... on EventConnection { events { __typename
                 ... on ExecutionStepOutputEvent { stepKey metadataEntries { ...Entry } } } } } }""",
            id=run_id,
        )
        events = self._one(data, "logsForRun")["events"]
        return {
            e["stepKey"]: entries(e["metadataEntries"])
            for e in events
            if e["__typename"] == "ExecutionStepOutputEvent"
        }

    def run_events(self, run_id: str) -> dict[str, float]:
        """When (epoch seconds) each kind of event of a run first happened, by GraphQL type:
        ``RunEnqueuedEvent``, ``RunStartingEvent`` (the daemon took it from the queue),
        ``RunStartEvent``, ``RunSuccessEvent``…"""
        data = self.query(
            """query($id: ID!) { logsForRun(runId: $id, limit: 10000) { __typename
               ... on EventConnection { events { __typename
               ... on MessageEvent { timestamp } } } } }""",
            id=run_id,
        )
        first: dict[str, float] = {}
        for e in self._one(data, "logsForRun")["events"]:
            first.setdefault(e["__typename"], int(e["timestamp"]) / 1000)
        return first

    # ------------------------------------------------------------------ assets

    def materializations(self, asset: str, limit: int = 10) -> list[dict[str, Any]]:
        """The latest materializations of ``asset`` (``a/b``), newest first: their metadata
        plus ``run_id`` and ``partition``."""
        data = self.query(
            ENTRY
            + """query($key: AssetKeyInput!, $limit: Int) { assetOrError(assetKey: $key) {
                 __typename ... on Asset { assetMaterializations(limit: $limit) { runId
                 partition metadataEntries { ...Entry } } } } }""",
            key={"path": asset.split("/")},
            limit=limit,
        )
        found = self._one(data, "assetOrError").get("assetMaterializations") or []
        return [
            {"run_id": m["runId"], "partition": m["partition"], **entries(m["metadataEntries"])}
            for m in found
        ]

    def observations(self, asset: str, limit: int = 10) -> list[dict[str, Any]]:
        """The latest observations of ``asset``, newest first: their metadata plus ``run_id``
        and ``description``."""
        data = self.query(
            ENTRY
            + """query($key: AssetKeyInput!, $limit: Int) { assetOrError(assetKey: $key) {
                 __typename ... on Asset { assetObservations(limit: $limit) { runId
                 description metadataEntries { ...Entry } } } } }""",
            key={"path": asset.split("/")},
            limit=limit,
        )
        found = self._one(data, "assetOrError").get("assetObservations") or []
        return [
            {"run_id": o["runId"], "description": o["description"], **entries(o["metadataEntries"])}
            for o in found
        ]

    def check_executions(self, asset: str, check: str, limit: int = 25) -> list[CheckExecution]:
        """The executions of ``asset``'s check ``check``, newest first."""
        data = self.query(
            """query($key: AssetKeyInput!, $check: String!, $limit: Int!) {
               assetCheckExecutions(assetKey: $key, checkName: $check, limit: $limit) {
               runId status evaluation { severity description } } }""",
            key={"path": asset.split("/")},
            check=check,
            limit=limit,
        )
        return [
            CheckExecution(
                e["runId"],
                e["status"],
                (e.get("evaluation") or {}).get("severity"),
                (e.get("evaluation") or {}).get("description"),
            )
            for e in data["assetCheckExecutions"]
        ]

    def checks(self, asset: str) -> dict[str, CheckResult]:
        """The checks of ``asset`` with their latest execution."""
        data = self.query(
            """query($key: AssetKeyInput!) { assetNodes(assetKeys: [$key]) {
               assetChecksOrError { __typename ... on AssetChecks { checks { name blocking
               executionForLatestMaterialization { status evaluation { severity success
               description } } } } } } }""",
            key={"path": asset.split("/")},
        )
        (node,) = data["assetNodes"]
        results = {}
        for check in node["assetChecksOrError"].get("checks") or []:
            execution = check["executionForLatestMaterialization"] or {}
            evaluation = execution.get("evaluation") or {}
            results[check["name"]] = CheckResult(
                check["name"],
                check["blocking"],
                execution.get("status"),
                evaluation.get("severity"),
                evaluation.get("description"),
            )
        return results

    # ------------------------------------------------------------------ sensors, schedules

    def sensor_ticks(self, name: str, limit: int = 50) -> list[Tick]:
        return self._ticks("sensor", name, limit)

    def schedule_ticks(self, name: str, limit: int = 50) -> list[Tick]:
        return self._ticks("schedule", name, limit)

    def _ticks(self, kind: str, name: str, limit: int) -> list[Tick]:
        kind_title = kind.title()
        data = self.query(
            f"""query($selector: {kind_title}Selector!, $limit: Int) {{
                {kind}OrError({kind}Selector: $selector) {{ __typename
                ... on {kind_title} {{ {kind}State {{ ticks(limit: $limit) {{ {TICK_FIELDS} }} }} }}
                ... on PythonError {{ message }} }} }}""",
            selector={
                "repositoryLocationName": self.location,
                "repositoryName": REPOSITORY,
                f"{kind}Name": name,
            },
            limit=limit,
        )
        ticks = self._one(data, f"{kind}OrError")[f"{kind}State"]["ticks"]
        return [
            Tick(
                t["status"],
                t["timestamp"],
                t["runIds"],
                t["runKeys"],
                t["skipReason"],
                (t["error"] or {}).get("message"),
            )
            for t in ticks
        ]


def _run_info(r: dict[str, Any]) -> RunInfo:
    return RunInfo(
        r["runId"],
        r["jobName"],
        r["status"],
        {t["key"]: t["value"] for t in r["tags"]},
        r.get("startTime"),
        r.get("endTime"),
    )


__all__ = [
    "FINISHED",
    "LOCATION",
    "REPOSITORY",
    "CheckResult",
    "CodeLocationError",
    "DagsterApi",
    "DagsterApiError",
    "RunInfo",
    "Tick",
    "entries",
    "entry_value",
]
