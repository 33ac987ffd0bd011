"""A server binary changed in the engine cache after its fetch is never run (issue 58):
the cache's manifest records its sha256, and every start checks it first."""

import os
import shutil
from pathlib import Path

from oltplab.engines.cache import cache_entry, engines_root
from oltplab.engines.supplier import supply
from oltplab.spec import parse_spec
from oltplab.store.files import sha256_file
from tests.support.cli import oltplab
from tests.support.engines import cells, spec_text


def private_cache(engine: str, cache: Path) -> tuple[Path, Path, str]:
    """A cache of its own holding the engine as the shared cache has it: every file a hard
    link to the shared one but the server binary, a copy (which the test alters, so that
    the cache other tests use stays as it was). The engine's folder in it, its server
    binary and the sha256 recorded for that."""
    distribution = supply(parse_spec(f'engines = [{{name = "{engine}"}}]', "t.toml").engines[0])
    shared = cache_entry(distribution.server)
    assert shared is not None and shared.parent == engines_root()
    entry = cache / "engines" / shared.name
    shutil.copytree(shared, entry, copy_function=os.link, ignore=shutil.ignore_patterns(".*"))
    server = entry / distribution.server.relative_to(shared)
    server.unlink()
    shutil.copy2(distribution.server, server)
    return entry, server, distribution.binary_sha256


# Any engine will do: this one's server binary is 25 MB (mariadb-10.11.5's is 297 MB, which
# the test copied and both it and oltplab hashed).
ENGINE = "mysql-5.7.22"


def test_a_binary_altered_in_the_cache_after_its_fetch_fails_its_cells_unrun(tmp_path):
    cache = tmp_path / "cache"
    entry, server, recorded = private_cache(ENGINE, cache)
    with server.open("ab") as binary:
        binary.write(b"\0")
    found = sha256_file(server)
    (tmp_path / "s.toml").write_text(spec_text([ENGINE], threads=[1], measure=2, warmup=0))
    env = {**os.environ, "OLTPLAB_CACHE": str(cache)}
    run = oltplab("run", "s.toml", "-r", "out", cwd=tmp_path, env=env)
    said = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 1, said
    refusal = (
        f"engine {ENGINE}: its server binary {server} has sha256 {found}, not {recorded} "
        "as the cache's manifest recorded at its fetch; it was changed since, so it is not "
        f"run: remove {entry} so that the engine is fetched again"
    )
    [cell] = cells(tmp_path / "out")
    assert cell["status"] == "failed" and cell["tps"] is None
    assert refusal in cell["reason"], cell["reason"]
    # The server never ran: no error log, no datadir.
    work = tmp_path / "out" / ".work" / ENGINE
    assert not (work / "mysqld.err").exists() and not (work / "datadir").exists()
