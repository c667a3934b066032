"""Streaming writes into ACID tables, on the table layer's statement lifecycle.

* :mod:`acid_platform.streaming.mutate` — the Streaming Mutation API (seed 004): a
  ``MutatorClient`` owns one long transaction over several tables; ``MutatorCoordinator`` s on
  any machine apply inserts, updates and deletes keyed by ROW__ID; everything becomes visible at
  commit, or nothing does.
"""
