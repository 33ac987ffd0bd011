"""The JUnit XML schema CI systems read (Jenkins xunit's junit-10.xsd, the one pytest checks
its own reports against), taken from pytest's source distribution once and cached."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest
import xmlschema

from oltplab.engines.cache import cache_root


def junit_schema() -> xmlschema.XMLSchema:
    cached = cache_root() / "junit-10.xsd"
    if not cached.is_file():
        with tempfile.TemporaryDirectory() as folder:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                 "--no-binary", ":all:", f"pytest=={pytest.__version__}", "-d", folder],
                check=True,
                timeout=300,
            )  # fmt: skip
            archive = next(Path(folder).glob("pytest-*.tar.gz"))
            with tarfile.open(archive) as tar:
                member = next(m for m in tar.getmembers() if m.name.endswith("/junit-10.xsd"))
                source = tar.extractfile(member)
                assert source is not None
                cached.parent.mkdir(parents=True, exist_ok=True)
                cached.write_bytes(source.read())
    return xmlschema.XMLSchema(str(cached))
