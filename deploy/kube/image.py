"""The image oltplab's pods run, built here with no registry: a Debian root filesystem
(debootstrap) with sysbench, the telemetry tools and oltplab's dependencies in a venv; then,
per build, this checkout's oltplab and the engines a spec names, copied from this machine's
cache. Layers are made with umoci and imported into the cluster's containerd.

    python3 -m deploy.kube.image SPEC...    # prints the image's name for --image
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from deploy.kube.layout import HERE, ClusterError, cache_root, exit_status, run, state_dir
from deploy.kube.runtime import import_image
from oltplab.kube.pods import POD_USER

SUITE = "bookworm"
# What `oltplab run` calls in a pod, and the libraries engine binaries link to.
PACKAGES = (
    "python3", "python3-venv", "ca-certificates", "sysbench", "sysstat", "procps",
    "percona-toolkit", "mariadb-server-core", "libaio1", "libnuma1", "libwrap0",
)  # fmt: skip
USER_ID = POD_USER  # as in deploy/Containerfile
VENV = "/opt/oltplab"
CACHE = f"{VENV}/cache"
REPOSITORY = "oltplab.local/oltplab"
CHECKOUT = HERE.parent.parent


def images_dir() -> Path:
    return cache_root() / "kube" / "images"


def mirror() -> str:
    """The Debian mirror this machine's apt uses: the one it already reaches."""
    sources = [*Path("/etc/apt").glob("sources.list.d/*.sources"), Path("/etc/apt/sources.list")]
    for source in sources:
        if not source.is_file():
            continue
        for line in source.read_text().splitlines():
            words = line.split()
            if words[:1] == ["URIs:"] and words[1].rstrip("/").endswith("/debian"):
                return words[1]
            if words[:1] == ["deb"] and words[-2:-1] and words[1].rstrip("/").endswith("/debian"):
                return words[1]
    raise ClusterError("no Debian mirror in /etc/apt: debootstrap needs one to build the image")


def wheels(folder: Path) -> list[Path]:
    """This checkout's oltplab and its dependencies as wheels, from pip's cache or PyPI."""
    folder.mkdir(parents=True, exist_ok=True)
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(folder), str(CHECKOUT))
    return sorted(folder.glob("*.whl"))


@contextmanager
def mounted_for_chroot(root: Path) -> Iterator[None]:
    """/proc and /dev inside a root filesystem while a tool runs in it."""
    done = []
    try:
        for name, options in (("proc", ["-t", "proc", "proc"]), ("dev", ["--bind", "/dev"])):
            run("mount", *options, str(root / name))
            done.append(root / name)
        yield
    finally:
        for target in reversed(done):
            subprocess.run(["umount", "--lazy", str(target)], capture_output=True)


def base_rootfs(dependencies: list[Path]) -> Path:
    """Debian with the packages, the pods' user and a venv holding oltplab's dependencies;
    built once per package list and dependency set."""
    key = hashlib.sha256(json.dumps([SUITE, PACKAGES, [w.name for w in dependencies]]).encode())
    root = images_dir() / f"rootfs-{key.hexdigest()[:12]}"
    if (root / ".complete").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    print(f"building the image's Debian {SUITE} root filesystem (debootstrap) ...", flush=True)
    run("debootstrap", "--variant=minbase", SUITE, str(partial), mirror())
    # No package may start a service inside the image while it is built.
    no_services = partial / "usr" / "sbin" / "policy-rc.d"
    no_services.write_text("#!/bin/sh\nexit 101\n")
    no_services.chmod(0o755)
    wheel_dir = partial / "tmp" / "wheels"
    wheel_dir.mkdir(parents=True)
    for wheel in dependencies:
        shutil.copy2(wheel, wheel_dir)
    with mounted_for_chroot(partial):
        # apt, unlike debootstrap, resolves every dependency of the packages asked for.
        run("chroot", str(partial), "apt-get", "update", "-q")
        run("chroot", str(partial), "env", "DEBIAN_FRONTEND=noninteractive", "apt-get",
            "install", "-y", "-q", "--no-install-recommends", *PACKAGES)  # fmt: skip
        run("chroot", str(partial), "useradd", "--create-home", "--uid", str(USER_ID), "oltplab")
        run("chroot", str(partial), "python3", "-m", "venv", VENV)
        run("chroot", str(partial), f"{VENV}/bin/pip", "install", "--quiet", "--no-cache-dir",
            "--no-index", "--find-links", "/tmp/wheels",
            *(f"/tmp/wheels/{w.name}" for w in dependencies))  # fmt: skip
        run("chroot", str(partial), "apt-get", "clean")
    no_services.unlink()
    shutil.rmtree(wheel_dir)
    (partial / ".complete").touch()
    partial.rename(root)
    return root


def engine_dirs(specs: list[Path], more: tuple[str, ...] = ()) -> list[Path]:
    """This machine's cached engines that the specs name (fetched first with oltplab), and
    MORE: the servers the pods start themselves, not those they reach where they run."""
    names: set[str] = set(more)
    for spec in specs:
        names.update(
            e["name"]
            for e in tomllib.loads(spec.read_text()).get("engines", [])
            if not {"endpoint", "kubernetes"} & set(e.get("source") or {})
        )
    found = []
    for manifest in (cache_root() / "engines").glob("*/manifest.json"):
        if json.loads(manifest.read_text())["engine"] in names:
            found.append(manifest.parent)
    missing = names - {json.loads((d / "manifest.json").read_text())["engine"] for d in found}
    if missing:
        raise ClusterError(
            f"engines not in this machine's cache: {', '.join(sorted(missing))}; fetch them "
            f"first: oltplab engines fetch {' '.join(sorted(missing))}"
        )
    return sorted(found)


def build_image(specs: list[Path], more: tuple[str, ...] = ()) -> tuple[str, Path]:
    """The image's name and its OCI archive, built once for this checkout and engines."""
    work = Path(tempfile.mkdtemp(prefix="image-", dir=images_dir().parent))
    try:
        engines = engine_dirs(specs, more)  # before the wheels: a missing engine fails at once
        built = wheels(work / "wheels")
        own = [w for w in built if w.name.startswith("oltplab-")]
        dependencies = [w for w in built if w not in own]
        digest = hashlib.sha256(own[0].read_bytes())
        digest.update(json.dumps([e.name for e in engines]).encode())
        tag = digest.hexdigest()[:12]
        archive = images_dir() / f"oltplab-{tag}.oci.tar"
        if archive.exists():
            return f"{REPOSITORY}:{tag}", archive
        root = base_rootfs(dependencies)
        upper = work / "upper"
        install_oltplab(root, own[0], upper, work)
        for engine in engines:
            shutil.copytree(
                engine, upper / CACHE.lstrip("/") / "engines" / engine.name, symlinks=True
            )
        run("chown", "-R", f"{USER_ID}:{USER_ID}", str(upper / CACHE.lstrip("/")))
        user = f"{USER_ID}:{USER_ID}"
        layered(root, tag, upper, archive, "--config.user", user,
                "--config.workingdir", "/home/oltplab", "--config.env", f"OLTPLAB_CACHE={CACHE}",
                "--config.env", f"PATH={VENV}/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
                "--config.env", "HOME=/home/oltplab")  # fmt: skip
        forget_older(keep=tag)
        return f"{REPOSITORY}:{tag}", archive
    finally:
        shutil.rmtree(work, ignore_errors=True)


def layout_dir() -> Path:
    return images_dir() / "layout"


def layered(
    root: Path, tag: str, upper: Path, archive: Path, *config: str, named: str = ""
) -> None:
    """An image of the base root filesystem with UPPER as one more layer and umoci's
    CONFIG options, tagged TAG in the layout and exported to ARCHIVE (as NAMED's tag)."""
    layout = layout_dir()
    if not layout.exists():
        run("umoci", "init", "--layout", str(layout))
    base = f"base-{root.name}"
    if base not in run("umoci", "ls", "--layout", str(layout)).stdout.split():
        print("layering the root filesystem (umoci) ...", flush=True)
        run("umoci", "new", "--image", f"{layout}:{base}")
        run("umoci", "insert", "--image", f"{layout}:{base}", str(root), "/")
    if tag in run("umoci", "ls", "--layout", str(layout)).stdout.split():
        run("umoci", "rm", "--image", f"{layout}:{tag}")  # a build that stopped half-way
    run("umoci", "tag", "--image", f"{layout}:{base}", tag)
    run("umoci", "insert", "--image", f"{layout}:{tag}", str(upper), "/")
    run("umoci", "config", "--image", f"{layout}:{tag}", *config)
    export(layout, tag, archive, named)


@contextmanager
def overlaid(root: Path, upper: Path, work: Path) -> Iterator[Path]:
    """ROOT as a tool run inside it sees it, through an overlay: UPPER then holds exactly
    the files the tool added or changed, which become one layer."""
    merged, scratch = work / "merged", work / "overlay-work"
    for folder in (merged, scratch, upper):
        folder.mkdir(parents=True)
    options = f"lowerdir={root},upperdir={upper},workdir={scratch}"
    run("mount", "-t", "overlay", "overlay", "-o", options, str(merged))
    try:
        with mounted_for_chroot(merged):
            yield merged
    finally:
        run("umount", str(merged))
    # The overlay's own bookkeeping folder is no part of the image.
    shutil.rmtree(upper / "tmp", ignore_errors=True)


def install_oltplab(root: Path, wheel: Path, upper: Path, work: Path) -> None:
    """oltplab installed into the base's venv."""
    with overlaid(root, upper, work) as merged:
        shutil.copy2(wheel, merged / "tmp" / wheel.name)
        run("chroot", str(merged), f"{VENV}/bin/pip", "install", "--quiet", "--no-cache-dir",
            "--no-deps", "--no-index", f"/tmp/{wheel.name}")  # fmt: skip
        (merged / "tmp" / wheel.name).unlink()


def forget_older(keep: str) -> None:
    """Only the newest build's archive and tag stay in the cache (each is ~400 MB); the
    base root filesystem and its layer stay for the next build, and the databases' images
    too."""
    layout = layout_dir()
    for old in images_dir().glob("oltplab-*.oci.tar"):
        if old.name != f"oltplab-{keep}.oci.tar":
            old.unlink()
    for tag in run("umoci", "ls", "--layout", str(layout)).stdout.split():
        if tag != keep and not tag.startswith(("base-", "database-")):
            run("umoci", "rm", "--image", f"{layout}:{tag}")
    run("umoci", "gc", "--layout", str(layout))


def export(layout: Path, tag: str, archive: Path, named: str = "") -> None:
    """One image's OCI archive: the layout's blobs it refers to, and an index naming it
    by its tag, or by NAMED's tag (several images in one layout may share none)."""
    single = archive.with_suffix(".layout")
    shutil.rmtree(single, ignore_errors=True)
    run("umoci", "init", "--layout", str(single))
    index = json.loads((layout / "index.json").read_text())
    chosen = [
        m for m in index["manifests"]
        if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag
    ]  # fmt: skip
    if named:
        for manifest in chosen:
            manifest["annotations"]["org.opencontainers.image.ref.name"] = named.rsplit(":")[-1]
    index["manifests"] = chosen
    (single / "index.json").write_text(json.dumps(index))
    blobs = single / "blobs" / "sha256"
    for blob in (layout / "blobs" / "sha256").iterdir():
        os.link(blob, blobs / blob.name)
    run("umoci", "gc", "--layout", str(single))  # only what the one image refers to stays
    partial = archive.with_suffix(".partial")
    run("tar", "-C", str(single), "-cf", str(partial), ".")
    partial.rename(archive)
    shutil.rmtree(single)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="+", type=Path, help="specs whose engines go in")
    parser.add_argument(
        "--engine",
        action="append",
        default=[],
        help="one more engine of the catalog to carry (deploy.kube.database runs it)",
    )
    given = parser.parse_args()

    def build_and_import() -> None:
        images_dir().mkdir(parents=True, exist_ok=True)
        name, archive = build_image(given.specs, tuple(given.engine))
        import_image(state_dir(), archive, name)
        print(f"image {name} in the cluster's containerd (archive {archive})")
        print(f"next: oltplab submit k8s SPEC --image {name} --engine-cache image ...")

    return exit_status("kube image", build_and_import)


if __name__ == "__main__":
    sys.exit(main())
