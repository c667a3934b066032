"""PostgreSQL: ``acid_open_txns``, opening txns in one round trip without holding the
``NEXT_TXN_ID`` row lock through a WAL flush (other databases: nothing).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26

The procedure runs two transactions in one ``CALL`` (from an autocommit connection):

1. the allocation — ``acid_sequences['txn']`` advanced by ``n`` and the ``txns`` rows inserted —
   committed with ``synchronous_commit`` off for that transaction alone, so the sequence row lock
   (the mutex with update/delete commits, Hive's S4U on ``NEXT_TXN_ID``) is released as soon as
   the commit record is written, not after the flush (a flush per allocation under the lock
   would serialise every open on the disk's sync latency);
2. a synchronous commit that writes: the rows' heartbeat touched. WAL is flushed in order, so
   its flush makes the allocation durable before the ids reach the client (a server crash can
   never hand an id out twice). ``p_confirmed`` counts the rows touched: fewer than ``n`` means
   some vanished in between (the caller refuses the ids; with none touched nothing was flushed).

Frozen with this revision: a later change to ``txns`` replaces the procedure in a new revision.
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

CREATE = """
CREATE PROCEDURE acid_open_txns(
    p_n BIGINT,
    p_state VARCHAR,
    p_now BIGINT,
    p_user VARCHAR,
    p_host VARCHAR,
    p_agent VARCHAR,
    p_type SMALLINT,
    INOUT p_first BIGINT DEFAULT NULL,
    INOUT p_confirmed BIGINT DEFAULT NULL
)
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    UPDATE acid_sequences SET next_val = next_val + p_n WHERE seq_name = 'txn'
        RETURNING next_val - p_n INTO p_first;
    INSERT INTO txns (txn_id, txn_state, txn_started, txn_last_heartbeat, txn_user, txn_host,
                      txn_agent_info, txn_heartbeat_count, txn_type)
        SELECT g, p_state, p_now, p_now, p_user, p_host, p_agent, 0, p_type
        FROM generate_series(p_first, p_first + p_n - 1) AS g;
    COMMIT;
    UPDATE txns SET txn_last_heartbeat = p_now
        WHERE txn_id BETWEEN p_first AND p_first + p_n - 1;
    GET DIAGNOSTICS p_confirmed = ROW_COUNT;
END
$$
"""

DROP = "DROP PROCEDURE acid_open_txns(BIGINT, VARCHAR, BIGINT, VARCHAR, VARCHAR, VARCHAR, SMALLINT, BIGINT, BIGINT)"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(CREATE)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(DROP)
