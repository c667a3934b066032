-- The second database of the compose topology's PostgreSQL: `metastore` (POSTGRES_DB) holds the
-- ACID metastore, `dagster` Dagster's runs, events and schedules.
CREATE DATABASE dagster OWNER acid;
