"""Where results live on disk: atomic files, the one-writer lock, the journal of cell
outcomes, and the rebuild of a ledger from them."""
