"""oltplab: a reproducible sysbench benchmark lab for MySQL-compatible engines."""

__version__ = "0.1.0"
