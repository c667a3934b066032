"""The Streaming Mutation API (seed 004; Hive's ``org.apache.hive.hcatalog.streaming.mutate``):
apply large change sets — inserts, updates and deletes keyed by ROW__ID — to one or more ACID
tables in one transaction, written by workers anywhere.

Client side (one process, e.g. a Spark driver):

* :class:`MutatorClient` — connects to a warehouse for its sink (written) and source (read)
  tables, with a lock-failure listener; :meth:`MutatorClient.new_transaction` gives a
  :class:`MutationTransaction` with ``begin`` (locks, write ids, heartbeat), ``tables``
  (serializable :class:`AcidTable` handles for the workers), ``read`` (the tables at the
  transaction's snapshot, with ROW__IDs), ``commit(reports)`` and ``abort``.

Worker side (any process holding a handle):

* :class:`MutatorCoordinator` — ``insert`` / ``update`` / ``delete(partition_values, record)``
  or ``mutate(batch)``; one writer per (partition, bucket) group; ``close()`` returns the
  :class:`MutationReport` the client commits with;
* :class:`BucketIdResolver` — stamps inserts with their bucket;
* the validators (:mod:`.validators`) raise :class:`~acid_platform.errors.GroupRevisitedError`,
  :class:`~acid_platform.errors.RecordSequenceError` and
  :class:`~acid_platform.errors.BucketIdError`.

Preparing a change set the way the documentation prescribes (join on a key for ROW__IDs, stamp
inserts, group by partition and bucket, sort by ROW__ID): :func:`prepare_changes` on Arrow
(:mod:`.changes`), and :mod:`acid_platform.streaming.mutate.spark` on Spark.

Modules: :mod:`.client` (the client and its transaction), :mod:`.table` (``AcidTable`` handles,
serializable), :mod:`.coordinator` (``MutatorCoordinator``), :mod:`.group_files` (the files of
one (partition, bucket) group), :mod:`.batches` (reading a prepared batch),
:mod:`.validators`, :mod:`.buckets` (``BucketIdResolver``), :mod:`.report`
(``MutationReport``), :mod:`.files` (the files on disk checked against the reports before the
commit), :mod:`.changes` and :mod:`.spark` (preparation). More in ``docs/mutation.md``.
"""

from acid_platform.streaming.mutate.buckets import BucketIdResolver
from acid_platform.streaming.mutate.changes import apply_changes, prepare_changes, split_changes
from acid_platform.streaming.mutate.client import (
    LockFailureListener,
    MutationTransaction,
    MutatorClient,
    SinkTable,
)
from acid_platform.streaming.mutate.coordinator import MUTATION, MutatorCoordinator
from acid_platform.streaming.mutate.report import MutationReport
from acid_platform.streaming.mutate.table import AcidTable, Mutation
from acid_platform.streaming.mutate.validators import (
    GroupingValidator,
    RecordIdentifier,
    SequenceValidator,
)

__all__ = [
    "MUTATION",
    "AcidTable",
    "BucketIdResolver",
    "GroupingValidator",
    "LockFailureListener",
    "Mutation",
    "MutationReport",
    "MutationTransaction",
    "MutatorClient",
    "MutatorCoordinator",
    "RecordIdentifier",
    "SequenceValidator",
    "SinkTable",
    "apply_changes",
    "prepare_changes",
    "split_changes",
]
