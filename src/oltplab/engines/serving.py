"""One engine of the catalog served in the foreground, as its family provisions it, for a
platform that runs it as a process of its own (the StatefulSet of deploy.kube.database):
its option file from the intent, its datadir made once, and the benchmark account, with
the family's own grant on the benchmark database only, given the password the platform
holds. It answers on every interface until it is sent SIGTERM, then stops cleanly."""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import dataclass
from pathlib import Path

from oltplab.base.asking import argument, option, required
from oltplab.base.errors import EngineError, SpecError
from oltplab.base.telling import Told
from oltplab.engines.families import family_of
from oltplab.engines.family import Layout
from oltplab.engines.hosts import Host
from oltplab.engines.launcher import PrivateInstance
from oltplab.engines.provision import BENCH_USER, GENERATED_PASSWORD, secret, write_cnf
from oltplab.engines.server import CONTROL_SECRET, EngineState, vault
from oltplab.engines.supplier import supply
from oltplab.spec import parse_spec
from oltplab.spec.catalog import CATALOG
from oltplab.store.files import write_atomic

SERVED_MARKER = "served"  # in the vault: the datadir was made and its accounts exist


class EveryInterface(Host):
    """This machine, its server listening on every interface: the pod's, in a cluster."""

    def address(self) -> str:
        return "0.0.0.0"


@dataclass(frozen=True, kw_only=True)
class EnginesServeAsked:
    engine: str = argument("An engine of the catalog (oltplab engines list).", "ENGINE")
    datadir: Path = required(
        "The folder its datadir and vault live in, kept across restarts.", metavar="DIR"
    )
    password_env: str = required(
        "The environment variable holding the benchmark account's password (24 characters "
        "of A-Z, a-z, 0-9, _ and -).",
        metavar="NAME",
    )
    port: int = option(3306, "The TCP port it listens on, on every interface.", min=1, max=65535)
    buffer_pool: str = option("128M", "Its buffer pool (shared_buffers for PostgreSQL).")

    def served(self) -> Told:
        """Serves until SIGTERM or SIGINT; what it served, once stopped."""
        if self.engine not in CATALOG:
            raise SpecError(f"engine {self.engine}: not in the catalog (oltplab engines list)")
        password = os.environ.get(self.password_env, "")
        if not GENERATED_PASSWORD.fullmatch(password.encode()):
            raise EngineError(
                f"--password-env {self.password_env}: expected 24 characters of A-Z, a-z, 0-9, "
                "_ and - in that variable (python3 -c 'import secrets; "
                "print(secrets.token_urlsafe(18))' makes one)"
            )
        spec = parse_spec(
            f'workloads = ["oltp_read_only"]\n[[engines]]\nname = "{self.engine}"\n'
            f'[config]\nbuffer_pool = "{self.buffer_pool}"\n',
            f"engines serve {self.engine}",
        )
        distribution = supply(spec.engine(self.engine))
        work = self.datadir
        instance = PrivateInstance(
            distribution, Layout(work, family_of(distribution)), secret(work, CONTROL_SECRET),
            EveryInterface(),
        )  # fmt: skip
        instance.prepare_folders()
        state = EngineState(
            self.engine, distribution.family, distribution.version, instance, BENCH_USER,
            password, "", work, distribution,
        )  # fmt: skip
        write_cnf(spec, state, instance, spec.tier_list[0].name, self.port)
        timeout = spec.protocol.start_timeout_seconds
        marker = vault(work) / SERVED_MARKER
        made = not marker.exists()
        if made:
            instance.initialise(timeout)
            instance.allow_clients(("%",))
        instance.start(self.port, timeout)
        with instance.control() as control:
            if made:
                control.create_benchmark_user(BENCH_USER, password)
                control.secure_accounts(BENCH_USER)
                write_atomic(marker, "")
            version = control.version()
        print(f"serving {self.engine} ({version}) on port {self.port}", flush=True)
        stopped = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stopped.set())
        while not stopped.wait(1) and instance.alive():
            pass
        died = not stopped.is_set()
        clean = instance.stop(spec.protocol.stop_timeout_seconds)
        if died:
            raise EngineError(f"engine {self.engine}: {instance.exit_description()}")
        ended = "stopped cleanly" if clean else "stopped, not cleanly"
        return Told((f"{self.engine} {ended}; its datadir stays in {work}",))
