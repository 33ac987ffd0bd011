"""A toy order, added as a new one is: this one class, its one `register` line at the
end, and nothing of oltplab changed. Loaded, a spec may say `order = "last-first"`: each
round's sessions are measured from the last to the first, each engine started for its
session and stopped after it (as listed, the other way round).

`OLTPLAB_PLUGINS=tests.support.toys.toy_order oltplab run ...` loads it (cli/plugins.py);
tests/engine/test_toy_order.py runs it and reads the sessions' order from the run's log."""

from __future__ import annotations

from oltplab.measure.ordering import AsListed, register
from oltplab.measure.run import Round


class LastFirst(AsListed):
    def measure(self, round_: Round) -> None:
        super().measure(Round(round_.sessions[::-1], round_.cells))


register("last-first")(LastFirst)
