"""`[compare]`: the margin within which two measurements count as the same (reruns,
bisect); not part of what is measured."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from oltplab.spec.fields import StrictModel


class CompareSpec(StrictModel):
    # +-this many percent is "the same" for `oltplab rerun`, `reproduced` and `bisect`.
    margin_pct: Annotated[float, Field(gt=0, lt=100)] = 5.0
