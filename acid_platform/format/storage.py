"""How a warehouse reaches an object store: one :class:`StorageOptions` per warehouse.

The endpoint, region, credentials and addressing style of an S3 (or S3-compatible) store are
configured one way, as :class:`StorageOptions`, which every entry point takes: ``Warehouse.open(
..., storage=...)``, the CLI (from the environment), the Dagster resource, and Spark executors
(which receive them with the plan, as data source options, never through a local file).

Where the values come from, first match wins:

- given explicitly (``StorageOptions(endpoint="http://127.0.0.1:9000", ...)``);
- a named ``profile`` read from ``~/.aws/credentials`` and ``~/.aws/config``;
- the environment (:meth:`StorageOptions.from_env`): ``AWS_ENDPOINT_URL_S3`` or
  ``AWS_ENDPOINT_URL``, ``AWS_REGION`` or ``AWS_DEFAULT_REGION``, ``AWS_ACCESS_KEY_ID``,
  ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_PROFILE`` and ``ACID_S3_PATH_STYLE``
  (``true``: path-style requests, as most S3-compatible servers want).

Locations stay plain URIs (``s3://bucket/warehouse/db.db/t``): the options are registered per
bucket for the process (:func:`configure`), so every part of the code that resolves a table's
location reaches the same store with the same client, which is built once and reused.
"""

from __future__ import annotations

import configparser
import json
import os
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow.fs as pafs

#: URI schemes served by :class:`pyarrow.fs.S3FileSystem` (``s3a`` is Hadoop's name for S3).
S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})

_TRUE = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True)
class StorageOptions:
    """Endpoint, region, credentials and addressing of an S3-compatible object store.

    ``endpoint`` is a URL (``http://127.0.0.1:9000``) or ``host:port`` (HTTPS); ``path_style``
    forces path-style requests (``None``: pyarrow's default, path-style exactly when an
    endpoint is given).
    """

    endpoint: str | None = None
    region: str | None = None
    access_key: str | None = None
    secret_key: str | None = None
    session_token: str | None = None
    profile: str | None = None
    path_style: bool | None = None

    def __repr__(self) -> str:  # never print a secret
        shown = {
            f.name: ("***" if f.name in ("secret_key", "session_token") and v else v)
            for f in fields(self)
            if (v := getattr(self, f.name)) is not None
        }
        return f"StorageOptions({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> StorageOptions:
        """The options the AWS environment variables (and ``ACID_S3_PATH_STYLE``) give."""
        e = os.environ if env is None else env
        style = e.get("ACID_S3_PATH_STYLE")
        return cls(
            endpoint=e.get("AWS_ENDPOINT_URL_S3") or e.get("AWS_ENDPOINT_URL") or None,
            region=e.get("AWS_REGION") or e.get("AWS_DEFAULT_REGION") or None,
            access_key=e.get("AWS_ACCESS_KEY_ID") or None,
            secret_key=e.get("AWS_SECRET_ACCESS_KEY") or None,
            session_token=e.get("AWS_SESSION_TOKEN") or None,
            profile=e.get("AWS_PROFILE") or None,
            path_style=None if style is None else style.strip().lower() in _TRUE,
        )

    def to_json(self) -> str:
        """The options as JSON (what a Spark plan carries to executors)."""
        return json.dumps({k: v for k, v in asdict(self).items() if v is not None})

    @classmethod
    def from_json(cls, text: str) -> StorageOptions:
        data = json.loads(text) if text else {}
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"storage options: unknown keys {unknown}")
        return cls(**data)

    def with_profile(self) -> StorageOptions:
        """These options with the ``profile``'s credentials and region filled in where unset."""
        if not self.profile:
            return self
        home = Path(os.environ.get("HOME", "~")).expanduser()
        creds = _ini(os.environ.get("AWS_SHARED_CREDENTIALS_FILE", home / ".aws" / "credentials"))
        config = _ini(os.environ.get("AWS_CONFIG_FILE", home / ".aws" / "config"))
        c = creds.get(self.profile, {})
        section = "default" if self.profile == "default" else f"profile {self.profile}"
        conf = config.get(section, {})
        if not c and not conf:
            raise ValueError(f"storage options: AWS profile {self.profile!r} not found")
        return replace(
            self,
            access_key=self.access_key or c.get("aws_access_key_id"),
            secret_key=self.secret_key or c.get("aws_secret_access_key"),
            session_token=self.session_token or c.get("aws_session_token"),
            region=self.region or conf.get("region"),
            endpoint=self.endpoint or conf.get("endpoint_url"),
        )

    def s3_filesystem(self) -> pafs.S3FileSystem:
        """A pyarrow S3 client for these options."""
        o = self.with_profile()
        kwargs: dict[str, object] = {}
        if o.endpoint:
            parts = urlsplit(o.endpoint if "://" in o.endpoint else f"https://{o.endpoint}")
            kwargs["endpoint_override"] = parts.netloc
            kwargs["scheme"] = parts.scheme
        if o.region:
            kwargs["region"] = o.region
        if o.access_key:
            kwargs["access_key"] = o.access_key
            kwargs["secret_key"] = o.secret_key
            if o.session_token:
                kwargs["session_token"] = o.session_token
        if o.path_style is not None:
            kwargs["force_virtual_addressing"] = not o.path_style
        # a small file is one PUT at close instead of a multipart upload's three requests; a
        # file is visible only once its upload completes, either way
        # a missing bucket is created when a warehouse is first opened in it
        return pafs.S3FileSystem(  # type: ignore[arg-type]
            allow_delayed_open=True, allow_bucket_creation=True, **kwargs
        )


def _ini(path: str | os.PathLike[str]) -> dict[str, dict[str, str]]:
    parser = configparser.ConfigParser()
    parser.read(os.fspath(path))
    return {s: dict(parser[s]) for s in parser.sections()}


# ---------------------------------------------------------------------- per-process registry
_lock = threading.Lock()
_options: dict[str, StorageOptions] = {}
_clients: dict[tuple[str, StorageOptions], pafs.FileSystem] = {}


def store_key(uri: str) -> str:
    """The store a URI lives in: ``scheme://bucket`` (``s3a`` counted as ``s3``)."""
    parts = urlsplit(uri)
    scheme = "s3" if parts.scheme in S3_SCHEMES else parts.scheme
    return f"{scheme}://{parts.netloc}"


def configure(uri: str, options: StorageOptions) -> None:
    """Use ``options`` for every location in the store of ``uri`` in this process (until
    configured again; a store never configured uses :meth:`StorageOptions.from_env`)."""
    with _lock:
        _options[store_key(uri)] = options


def options_for(uri: str) -> StorageOptions:
    """The options registered for the store of ``uri``, else those of the environment."""
    with _lock:
        found = _options.get(store_key(uri))
    return found if found is not None else StorageOptions.from_env()


def filesystem_for(uri: str) -> pafs.FileSystem:
    """The (cached) file system that serves ``uri``."""
    parts = urlsplit(uri)
    if parts.query:
        raise ValueError(
            f"location {uri!r}: give the store's endpoint and credentials as StorageOptions "
            "(or the AWS_* environment variables), not in the URI"
        )
    if parts.scheme not in S3_SCHEMES:
        return pafs.FileSystem.from_uri(uri)[0]
    options = options_for(uri)
    key = (store_key(uri), options)
    with _lock:
        client = _clients.get(key)
    if client is None:
        client = options.s3_filesystem()
        with _lock:
            client = _clients.setdefault(key, client)
    return client


def path_in_store(uri: str) -> str:
    """The path of ``uri`` inside its file system (``bucket/key`` for S3, ``/path`` for HDFS
    and ``file://``)."""
    parts = urlsplit(uri)
    if parts.scheme in S3_SCHEMES or parts.scheme in ("gs", "gcs"):
        return f"{parts.netloc}{parts.path}".rstrip("/")
    return parts.path.rstrip("/") or "/"


@dataclass(frozen=True)
class StorageBinding:
    """A store's options, for work shipped to other processes (Spark tasks): unpickling a
    binding registers its options there (:func:`configure`) before anything in the same
    payload opens a file. Carry one in every job a task receives."""

    uri: str
    options: StorageOptions

    def __reduce__(self) -> tuple[object, tuple[str, StorageOptions]]:
        return (bind, (self.uri, self.options))


def bind(uri: str, options: StorageOptions) -> StorageBinding:
    """Register ``options`` for the store of ``uri`` in this process; the binding."""
    configure(uri, options)
    return StorageBinding(uri, options)


def binding_for(location: str) -> StorageBinding | None:
    """The binding of the store ``location`` is in (``None`` for local paths)."""
    if "://" not in location or urlsplit(location).scheme not in S3_SCHEMES:
        return None
    return StorageBinding(store_key(location), options_for(location))
