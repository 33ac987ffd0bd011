"""Existing sysbench result trees brought into a ledger: what their names say (`layout`),
a mapping file for layouts that cannot be guessed (`mapping`), the walk that finds every
file (`scan`) and the import itself (`load`)."""
