"""The link between sysbench and a remote engine: its measured round trip, and shaping.

Shaping (`[network] delay_ms, rate_mbit, loss_pct`) is applied on the server host for as
long as the engine runs there and removed when it stops. `tc qdisc ... netem` on the
interface facing the client is the first choice; on kernels without netem (this one),
a Toxiproxy in front of the engine's port adds the delay (and the rate limit) instead,
and sysbench connects through it. The method used is recorded with the run.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import statistics
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from oltplab.base.errors import EngineError
from oltplab.engines.cache import cache_root
from oltplab.engines.control import Connection
from oltplab.engines.hosts import SshHost
from oltplab.spec import NetworkSpec

TOXIPROXY = "toxiproxy-server"


def round_trip_ms(connect: Callable[[], Connection], probes: int = 30) -> float:
    """Median time of `SELECT 1` as sysbench's connections see it: one round trip through
    whatever shapes the link (a TCP connect would end at a shaping proxy)."""
    with connect() as control:
        control.rows("SELECT 1")
        times = []
        for _ in range(probes):
            started = time.perf_counter()
            control.rows("SELECT 1")
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def local_toxiproxy() -> Path | None:
    found = shutil.which(TOXIPROXY)
    candidate = cache_root() / "tools" / "bin" / TOXIPROXY
    return Path(found) if found else candidate if candidate.is_file() else None


@dataclass
class Shaping:
    """What was applied, for provenance and the report."""

    method: str
    delay_ms: float
    rate_mbit: float | None
    loss_pct: float
    interface: str | None = None

    def describe(self) -> str:
        parts = [f"delay {self.delay_ms:g} ms"] if self.delay_ms else []
        if self.rate_mbit:
            parts.append(f"rate {self.rate_mbit:g} Mbit/s")
        if self.loss_pct:
            parts.append(f"loss {self.loss_pct:g}%")
        return f"{', '.join(parts)} via {self.method}"


class Shaper:
    """Shapes the link to one engine on one host while it runs."""

    def __init__(self, host: SshHost, network: NetworkSpec) -> None:
        self.host = host
        self.network = network
        self.applied: Shaping | None = None
        self._proxy: subprocess.Popen[bytes] | None = None
        self._interface: str | None = None

    def start(self, server_address: str, server_port: int, client_address: str) -> int:
        """Shape the link; returns the port sysbench must connect to."""
        netem = self._try_netem(client_address)
        if netem:
            self.applied = netem
            return server_port
        return self._start_toxiproxy(server_address, server_port)

    def _try_netem(self, client_address: str) -> Shaping | None:
        route = self.host.run(["ip", "route", "get", client_address], timeout=60).stdout.split()
        if "dev" not in route:
            return None
        interface = route[route.index("dev") + 1]
        options = []
        if self.network.delay_ms:
            options += ["delay", f"{self.network.delay_ms:g}ms"]
        if self.network.rate_mbit:
            options += ["rate", f"{self.network.rate_mbit:g}mbit"]
        if self.network.loss_pct:
            options += ["loss", f"{self.network.loss_pct:g}%"]
        done = self.host.run(
            ["tc", "qdisc", "add", "dev", interface, "root", "netem", *options], timeout=60
        )
        if done.returncode != 0:
            return None
        self._interface = interface
        return Shaping(
            "tc netem", self.network.delay_ms, self.network.rate_mbit, self.network.loss_pct,
            interface,
        )  # fmt: skip

    def _start_toxiproxy(self, address: str, port: int) -> int:
        if self.network.loss_pct:
            raise EngineError(
                f"host {self.host.name}: tc netem is not available there and Toxiproxy cannot "
                "drop packets; remove network.loss_pct"
            )
        binary = local_toxiproxy()
        if binary is None:
            raise EngineError(
                f"host {self.host.name}: tc netem is not available there; link shaping then "
                f"needs Toxiproxy ({TOXIPROXY} on PATH or in oltplab's cache; scripts/setup.sh "
                "builds it)"
            )
        remote_dir = self.host.workdir / "tools"
        if self.host.run(["test", "-x", str(remote_dir / binary.name)]).returncode != 0:
            self.host.push_tree(binary.parent, remote_dir)
        api_port, proxy_port = self.host.free_ports(2)
        config = remote_dir / f"toxiproxy-{proxy_port}.json"
        proxies = [{"name": "engine", "listen": f"{address}:{proxy_port}",
                    "upstream": f"{address}:{port}", "enabled": True}]  # fmt: skip
        self.host.check(
            ["sh", "-c", 'cat > "$1"', "sh", str(config)], input_text=json.dumps(proxies)
        )
        self._proxy = self.host.spawn_held(
            [str(remote_dir / binary.name), "-host", address, "-port", str(api_port),
             "-config", str(config)]
        )  # fmt: skip
        api = f"http://{address}:{api_port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{api}/proxies", timeout=2) as answer:
                    if "engine" in json.loads(answer.read()):
                        break
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline or self._proxy.poll() is not None:
                self.stop()
                raise EngineError(f"host {self.host.name}: Toxiproxy did not start")
            time.sleep(0.3)
        toxics = []
        if self.network.delay_ms:
            # Downstream only: each round trip gains the delay once, as netem on the
            # server's egress would give.
            toxics.append({"type": "latency", "stream": "downstream",
                           "attributes": {"latency": round(self.network.delay_ms)}})  # fmt: skip
        if self.network.rate_mbit:
            rate = round(self.network.rate_mbit * 1000 / 8)  # KB/s
            for stream in ("downstream", "upstream"):
                toxics.append({"type": "bandwidth", "stream": stream,
                               "attributes": {"rate": rate}})  # fmt: skip
        for index, toxic in enumerate(toxics):
            request = urllib.request.Request(
                f"{api}/proxies/engine/toxics",
                data=json.dumps({"name": f"t{index}", **toxic}).encode(),
                headers={"Content-Type": "application/json"},
                method="POST",
            )
            with urllib.request.urlopen(request, timeout=10):
                pass
        self.applied = Shaping(
            "toxiproxy", self.network.delay_ms, self.network.rate_mbit, 0.0, None
        )
        return proxy_port

    def stop(self) -> None:
        if self._interface:
            with contextlib.suppress(EngineError):
                self.host.run(["tc", "qdisc", "del", "dev", self._interface, "root"], timeout=60)
            self._interface = None
        if self._proxy is not None:
            SshHost.release(self._proxy, 10)
            self._proxy = None
