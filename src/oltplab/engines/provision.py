"""Engines made ready to serve sessions.

A provisioned engine gets its binaries, a datadir initialised once, the benchmark user and
`sysbench prepare`, then a snapshot that every session starts from. An endpoint is an
existing server: oltplab only connects to it, checks that the sbtest tables are there, and
prepares them only when asked to.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import socket
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from oltplab.base import nofollow
from oltplab.base.errors import EngineError
from oltplab.engines.config import Setting, extra_settings
from oltplab.engines.distribution import Distribution
from oltplab.engines.endpoint import Endpoint, reach
from oltplab.engines.families import (
    family_named,
    family_of,
    family_said,
    intent_settings,
    option_file,
)
from oltplab.engines.family import Layout
from oltplab.engines.hosts import Host, SshHost
from oltplab.engines.isolation import evict_page_cache
from oltplab.engines.launcher import PrivateInstance
from oltplab.engines.network import Shaper
from oltplab.engines.remote import place_on
from oltplab.engines.server import (
    BENCH_SECRET,
    CONTROL_SECRET,
    SNAPSHOT_MARKER,
    EngineState,
    vault,
)
from oltplab.engines.snapshots import SnapshotStore
from oltplab.engines.supplier import supply
from oltplab.spec import LOCAL_HOST, Spec, TierSpec
from oltplab.spec.sources import EngineSpec, KubernetesSource
from oltplab.store.directory import prepare_output
from oltplab.store.files import os_problem, write_atomic, write_secret
from oltplab.sysbench.driver import execute
from oltplab.workloads.kinds import dataset_key, kinds_used

log = logging.getLogger("oltplab")
BENCH_USER = "sbtest"
# Snapshots prepared before every account had a password are prepared again.
SNAPSHOT_FORMAT = 2
PASSWORD_BYTES = 18  # token_urlsafe's 24 characters
GENERATED_PASSWORD = re.compile(rb"[A-Za-z0-9_-]{24}")


def tunables(
    spec: Spec, state: EngineState, tier: str, *, tier_overrides: bool = True
) -> list[Setting]:
    """The tier's intent in this engine's own terms, then the engine's raw extras
    (without tier_overrides: what [config] alone asks for)."""
    intent = spec.resolve(spec.tier(tier) if tier_overrides else TierSpec(name=tier))
    engine = spec.engine(state.name)
    return intent_settings(state.family, state.version, intent) + extra_settings(engine.extra)


def write_cnf(
    spec: Spec, state: EngineState, instance: PrivateInstance, tier: str, port: int
) -> str:
    text = option_file(
        state.family,
        state.version,
        state.name,
        tier,
        instance.paths(port),
        tunables(spec, state, tier),
    )
    instance.write_option_file(text)
    return text


def local_instance(distribution: Distribution, work: Path) -> PrivateInstance:
    """A private instance of the distribution's family on this machine."""
    layout = Layout(work, family_of(distribution))
    return PrivateInstance(distribution, layout, secret(work, CONTROL_SECRET), Host())


def machine_for(spec: Spec, host: str) -> Host:
    """Where an engine placed on `host` runs: this machine, or an SSH host of the spec."""
    if host == LOCAL_HOST:
        return Host()
    found = spec.host(host)
    return SshHost(
        name=found.name,
        destination=found.ssh,
        port=found.port,
        identity_file=found.identity_file,
        workdir=PurePosixPath(found.workdir),
        options=tuple(found.options.items()),
    )


def begin_session(spec: Spec, state: EngineState, tier: str) -> str | None:
    """A private instance restored from its snapshot and started with the tier's option
    file (returned); an endpoint is as it is (None). Isolated, the restored datadir's pages
    leave the page cache first, so every session reads it from the disk alike (only its
    pages: the host's cache is not ours)."""
    if not state.server.owned:
        return None
    instance = state.server
    assert isinstance(instance, PrivateInstance)
    instance.restore()
    isolated = spec.protocol.isolation and instance.machine.is_local
    if isolated:
        log.info("isolation: %s", evict_page_cache(instance.layout.datadir))
    port = instance.free_port()
    cnf = write_cnf(spec, state, instance, tier, port)
    instance.start(port, spec.protocol.start_timeout_seconds)
    return cnf


def secret(work: Path, name: str) -> str:
    """A password of the engine's (the control account's, the benchmark user's): random,
    kept in the engine's vault in a file only its owner can read, the same for the life of
    the datadir. One read back must be of the form made here: it goes into option files."""
    path = vault(work) / name
    try:
        password = nofollow.read_bytes(path).strip()
    except FileNotFoundError:
        made = secrets.token_urlsafe(PASSWORD_BYTES)
        write_secret(path, made)
        return made
    except OSError as exc:
        raise os_problem(exc, path) from None
    if not GENERATED_PASSWORD.fullmatch(password):
        raise EngineError(
            f"{path}: not a password oltplab made (24 characters of A-Z, a-z, 0-9, _ and -); "
            f"remove {path.parent} and {work} to provision the engine again"
        )
    return password.decode()


def remote_folder(host_workdir: PurePosixPath, work: Path) -> Path:
    """The engine's folder on a host: one per results directory (and machine it is run
    from), so two runs never share a pid file, a socket or a datadir."""
    origin = f"{socket.gethostname()}:{work.resolve()}"
    # Short: the server's socket lives in it, and socket paths end at 107 bytes.
    key = hashlib.sha256(origin.encode()).hexdigest()[:10]
    return Path(host_workdir / f"i-{key}")


def _remote_layout(host: SshHost, work: Path, distribution: Distribution) -> Layout:
    return Layout(remote_folder(host.workdir, work), family_of(distribution), socket_in_work=True)


Phase = Callable[[str], None]


def sysbench_prepare(
    spec: Spec, sysbench: str, state: EngineState, folder: Path, action: str = "prepare"
) -> None:
    """Each used workload kind's loader, in the spec's order: sysbench prepare (or cleanup:
    it drops the tables it made, nothing else)."""
    options = state.sysbench_options()
    for kind in kinds_used(spec):
        call = kind.prepare(spec, action, os.cpu_count() or 1)
        output = prepare_output(folder, kind.name, action)
        with options.present():
            result = execute(
                call.args(sysbench, options.path),
                output,
                float("inf"),
                lambda _: None,
                state.target(),
            )
        if result.returncode != 0:
            detail = " | ".join(output.read_text(errors="replace").strip().splitlines()[-3:])
            raise EngineError(f"engine {state.name}: sysbench {action} failed: {detail}")


def provisioned_engine(
    spec: Spec,
    engine: EngineSpec,
    work: Path,
    sysbench: str,
    phase: Phase,
    on_instance: Callable[[PrivateInstance], None],
    machine: Host,
    store: SnapshotStore | None = None,
) -> EngineState:
    """The engine ready on this machine, or on another one (machine is an SshHost). With a
    snapshot store, a dataset another machine prepared is taken from it, and one prepared
    here is published to it."""
    phase(f"{engine.name}: fetching binaries")
    distribution = supply(engine)
    wanted: dict[str, Any] = {
        "dataset": dataset_key(spec),
        "format": SNAPSHOT_FORMAT,
    }
    entry = None
    if store is not None and machine.is_local:
        entry = store.entry(
            distribution.family, distribution.binary_sha256, wanted["dataset"], SNAPSHOT_FORMAT
        )
    claiming = store.claim(entry) if store is not None and entry is not None else None
    with claiming or contextlib.nullcontext() as claim:
        marker = vault(work) / SNAPSHOT_MARKER
        layout = Layout(work, family_of(distribution))
        if (
            claim is None
            and entry is not None
            and not _usable(marker, wanted, layout.snapshot.is_dir())
        ):
            work.mkdir(parents=True, exist_ok=True)
            if entry.fetch(layout.snapshot, marker):
                phase(f"{engine.name}: dataset taken from the shared snapshot store")
                log.info("%s: dataset taken from %s", engine.name, entry.entry)
        instance = _instance(spec, distribution, work, machine, phase)
        on_instance(instance)
        instance.prepare_folders()
        layout.sysbench_options.unlink(missing_ok=True)  # a killed run's, password included
        state = EngineState(
            engine.name,
            distribution.family,
            distribution.version,
            instance,
            BENCH_USER,
            secret(work, BENCH_SECRET),
            "",
            work,
            distribution,
        )
        if _usable(marker, wanted, instance.has_snapshot()):
            state.server_version = str(_read_marker(marker)["server_version"])
            return state
        marker.unlink(missing_ok=True)
        _prepare_snapshot(spec, state, instance, sysbench, phase, work)
        write_atomic(marker, json.dumps({**wanted, "server_version": state.server_version}))
        if claim is not None:
            claim.publish(layout.snapshot, marker)
        return state


def _instance(
    spec: Spec, distribution: Distribution, work: Path, machine: Host, phase: Phase
) -> PrivateInstance:
    if isinstance(machine, SshHost):
        phase(f"{distribution.engine}: placing binaries on host {machine.name}")
        shaper = Shaper(machine, spec.network) if spec.network.shaped else None
        return PrivateInstance(
            place_on(distribution, machine),
            _remote_layout(machine, work, distribution),
            secret(work, CONTROL_SECRET),
            machine,
            shaper,
        )
    return local_instance(distribution, work)


def _usable(marker: Path, wanted: dict[str, object], has_snapshot: bool) -> bool:
    """Whether the snapshot on disk holds the dataset wanted."""
    known = _read_marker(marker)
    return has_snapshot and all(known.get(k) == v for k, v in wanted.items())


def _read_marker(marker: Path) -> dict[str, object]:
    """What the snapshot holds; an unreadable marker means no usable snapshot."""
    try:
        found = json.loads(nofollow.read_text(marker))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _benchmark_clients(spec: Spec, instance: PrivateInstance) -> tuple[str, ...]:
    """Over a network only sysbench's machine may log in as the benchmark user (and, when
    the link is shaped, a shaping proxy on the server host, whose address it then is)."""
    if instance.machine.is_local:
        return ("%",)
    if spec.network.shaped:
        return (instance.client, instance.host)
    return (instance.client,)


def _prepare_snapshot(
    spec: Spec,
    state: EngineState,
    instance: PrivateInstance,
    sysbench: str,
    phase: Phase,
    work: Path,
) -> None:
    timeout = spec.protocol.start_timeout_seconds
    phase(f"{state.name}: initialising datadir")
    port = instance.free_port()
    write_cnf(spec, state, instance, spec.tier_list[0].name, port)
    instance.initialise(timeout)
    clients = _benchmark_clients(spec, instance)
    instance.allow_clients(clients)
    instance.start(port, timeout)
    try:
        with instance.control() as control:
            control.create_benchmark_user(BENCH_USER, state.password, clients=clients)
            control.secure_accounts(BENCH_USER)
            state.server_version = control.version()
        datasets = ", ".join(kind.describe_dataset(spec) for kind in kinds_used(spec))
        phase(f"{state.name}: sysbench prepare ({datasets})")
        sysbench_prepare(spec, sysbench, state, work)
    finally:
        clean = instance.stop(spec.protocol.stop_timeout_seconds)
    if not clean:
        raise EngineError(f"engine {state.name}: no clean shutdown after prepare; not snapshotted")
    instance.take_snapshot()
    log.info("%s: dataset prepared and snapshotted (%s)", state.name, state.server_version)


def endpoint_engine(
    spec: Spec, engine: EngineSpec, work: Path, sysbench: str, phase: Phase, prepare: bool
) -> EngineState:
    reached = reach(engine)
    phase(f"{engine.name}: connecting to {reached.source.endpoint}")
    server = Endpoint(reached.source, reached.password, work, reached.family)
    try:
        control = server.control()
    except EngineError as unanswered:
        if not reached.unready:
            raise
        raise EngineError(
            f"engine {engine.name}: {reached.platform}: not ready when it was read "
            f"({reached.unready}), and it did not answer: {unanswered}"
        ) from None
    with control:
        version = control.version()
        said = control.self_description()
        tables = control.benchmark_tables()
        unconfined = control.unconfined() if isinstance(engine.source, KubernetesSource) else ""
    if unconfined:
        raise EngineError(
            f"engine {engine.name}: {unconfined}; the operator's benchmark account must have "
            "rights on its own database only"
        )
    family = (
        family_named(engine.family) if engine.family else family_said(said, server.client_protocol)
    )
    assert family is not None, "MySQL claims every server of its protocol"
    state = EngineState(
        engine.name,
        family.name,
        family.release(version),
        server,
        reached.source.user,
        server.password,
        version,
        work,
        platform=reached.platform,
    )
    if tables < spec.dataset.tables:
        if not prepare:
            raise EngineError(
                f"engine {engine.name}: {reached.source.endpoint} has {tables} sbtest table(s), "
                f"the dataset needs {spec.dataset.tables}; run with --prepare to "
                "create them (oltplab never writes to an endpoint unasked)"
            )
        phase(f"{engine.name}: sysbench prepare on the endpoint")
        work.mkdir(parents=True, exist_ok=True)
        sysbench_prepare(spec, sysbench, state, work)
    return state
