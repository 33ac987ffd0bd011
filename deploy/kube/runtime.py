"""containerd, the pods' network and the sandbox image: the node's container runtime."""

from __future__ import annotations

import ipaddress
import json
import shutil
from pathlib import Path

from deploy.kube.layout import (
    BRIDGE,
    GATEWAY,
    PAUSE_IMAGE,
    POD_CIDR,
    SERVICE_CIDR,
    ClusterError,
    bin_dir,
    run,
)

# containerd's environment. Every image is imported, so a pull only happens for an image the
# node lacks; it then goes to a proxy on loopback that refuses it (ErrImagePull), and no name
# lookup or connection leaves the machine, where it would try the registry by default.
REFUSE_PULLS = {"HTTPS_PROXY": "http://127.0.0.1:1", "HTTP_PROXY": "http://127.0.0.1:1",
                "NO_PROXY": "", "https_proxy": "", "http_proxy": "", "no_proxy": ""}  # fmt: skip


def containerd_config(state: Path) -> Path:
    runtime = state / "containerd"
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    text = f"""version = 2
root = "{runtime / "root"}"
state = "{runtime / "state"}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "{runtime / "containerd.sock"}"

[ttrpc]
  address = "{runtime / "containerd.ttrpc.sock"}"

[{cri}]
  sandbox_image = "{PAUSE_IMAGE}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_tcp_service = true
  # Where we may not lower a process's OOM score (a sandboxed root, as here), pods keep ours.
  restrict_oom_score_adj = true

[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
  Root = "{runtime / "runc"}"

[{cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "{state / "cni" / "net.d"}"
"""
    path = runtime / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def cni_config(state: Path) -> None:
    """Pods on the cluster's bridge, with routes to each other and the Services only."""
    network = {
        "cniVersion": "1.0.0",
        "name": "oltplab",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": str(POD_CIDR), "gateway": GATEWAY}]],
                    "routes": [{"dst": str(SERVICE_CIDR)}],
                    "dataDir": str(state / "cni" / "ipam"),
                },
            }
        ],
    }
    folder = state / "cni" / "net.d"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "10-oltplab.conflist").write_text(json.dumps(network, indent=2) + "\n")


def check_addresses() -> None:
    routes = run("ip", "-j", "route", "show", "table", "all").stdout
    for route in json.loads(routes):
        destination = route.get("dst", "")
        if "/" not in destination or route.get("dev") == BRIDGE:
            continue
        taken = ipaddress.ip_network(destination, strict=False)
        for ours in (POD_CIDR, SERVICE_CIDR):
            if taken.version == ours.version and taken.overlaps(ours):
                raise ClusterError(
                    f"{ours} is already routed here ({destination} dev {route.get('dev')}); "
                    "the cluster needs it for itself"
                )


def make_bridge() -> None:
    """The bridge exists before the control plane, which listens on its address."""
    if run("ip", "-j", "link", "show").stdout.find(f'"ifname":"{BRIDGE}"') < 0:
        run("ip", "link", "add", BRIDGE, "type", "bridge")
    addresses = run("ip", "-j", "addr", "show", "dev", BRIDGE).stdout
    if GATEWAY not in addresses:
        run("ip", "addr", "add", f"{GATEWAY}/{POD_CIDR.prefixlen}", "dev", BRIDGE)
    run("ip", "link", "set", BRIDGE, "up")
    # A Service's address lives on the bridge: with kube-proxy not (yet) routing it, a
    # packet to it stays here instead of taking the machine's default route out.
    run("ip", "route", "replace", str(SERVICE_CIDR), "dev", BRIDGE)
    # A pod's packet to a Service comes back out of the bridge to the chosen pod: forwarding
    # on this bridge alone, which goes with it; the machine's own setting stays as it is.
    Path(f"/proc/sys/net/ipv4/conf/{BRIDGE}/forwarding").write_text("1\n")


def pause_image() -> Path:
    """The sandbox image as an OCI archive: the pause binary alone, run as nobody."""
    archive = bin_dir().parent / "pause.oci.tar"
    return binary_image(bin_dir() / "pause", "/pause", "65535:65535", PAUSE_IMAGE, archive)


def binary_image(
    binary: Path, inside: str, user: str, name: str, archive: Path, aliases: tuple[str, ...] = ()
) -> Path:
    """An image of one static binary at INSIDE, its entrypoint, run as USER from / and
    tagged as NAME's tag, with symbolic links to it at ALIASES: built once into ARCHIVE."""
    if archive.exists():
        return archive
    work = archive.with_suffix(".build")
    layout, bundle = work / "layout", work / "bundle"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    image = f"{layout}:{name.rsplit(':', 1)[1]}"
    run("umoci", "init", "--layout", str(layout))
    run("umoci", "new", "--image", image)
    run("umoci", "config", "--image", image, "--config.entrypoint", inside,
        "--config.user", user, "--config.workingdir", "/")  # fmt: skip
    run("umoci", "unpack", "--image", image, str(bundle))
    target = bundle / "rootfs" / inside.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(binary, target)
    for alias in aliases:
        (bundle / "rootfs" / alias.lstrip("/")).symlink_to(target.relative_to(bundle / "rootfs"))
    run("umoci", "repack", "--image", image, str(bundle))
    run("umoci", "gc", "--layout", str(layout))
    partial = archive.with_suffix(".partial")
    run("tar", "-C", str(layout), "-cf", str(partial), ".")
    partial.rename(archive)
    shutil.rmtree(work)
    return archive


def import_image(state: Path, archive: Path, name: str) -> None:
    socket_path = state / "containerd" / "containerd.sock"
    base = name.rsplit(":", 1)[0]
    run("ctr", "--address", str(socket_path), "--namespace", "k8s.io", "images", "import",
        "--base-name", base, str(archive))  # fmt: skip
    listed = run("ctr", "--address", str(socket_path), "--namespace", "k8s.io", "images",
                 "ls", "--quiet").stdout.split()  # fmt: skip
    if name not in listed:
        raise ClusterError(f"{archive}: containerd imported it, but not as {name} ({listed})")


def ctr(state: Path, *args: str) -> str:
    socket_path = state / "containerd" / "containerd.sock"
    return run("ctr", "--address", str(socket_path), "--namespace", "k8s.io", *args).stdout
