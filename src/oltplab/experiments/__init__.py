"""Experiments that measure to answer one question (bisect, calibrate, capacity, precision),
built on the runner and on the pure analysis they share with reports."""
