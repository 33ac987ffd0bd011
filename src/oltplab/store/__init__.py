"""Where results live on disk, together: the ledger (SQLite) and its schema, the per-second
series, run.json's provenance, atomic files, the one-writer lock, the journal of cell
outcomes, and the rebuild of a ledger from them."""
