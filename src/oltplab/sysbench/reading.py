"""A sysbench output file read whole: plain, or a time-sliced cell's, as its slices measured
it. Beside both the parser and the slices, so that neither imports the other."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from oltplab.sysbench.output import NO_SAMPLES, OutputParser, SysbenchOutput, read_blocks
from oltplab.sysbench.slices import as_measured


def _noting_slices(lines: Iterable[str], noted: list[str]) -> Iterator[str]:
    for line in lines:
        if line.startswith(("SLICE ", "SLOTS ")):
            noted.append(line)
        yield line


def read_output(path: Path) -> SysbenchOutput:
    """A sysbench output file parsed; a time-sliced cell's (one stating its SLOTS) as its
    own slices measured it, which is what its run recorded."""
    parser = OutputParser()
    noted: list[str] = []
    with path.open(encoding="utf-8", errors="replace") as lines:
        blocks = [parser.feed(block) for block in read_blocks(_noting_slices(lines, noted))]
    parsed = parser.finish(np.concatenate(blocks) if blocks else NO_SAMPLES)
    return as_measured(parsed, "".join(noted), os.sysconf("SC_CLK_TCK")) if noted else parsed
