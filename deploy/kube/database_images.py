"""The images the operators run their databases from, built here from the catalog's
engines on the pods' Debian root filesystem, with what each operator asks of its image
(read from its source, as the comments say) and nothing pulled.

- PostgreSQL for CloudNativePG: the catalog's postgresql-15, Debian's package, installed
  into a layer. The operator replaces the image's command with its own instance manager and
  asks for initdb, postgres, pg_ctl, pg_controldata and pg_basebackup on the PATH
  (docs/src/container_images.md), and runs them as uid and gid 26 unless the Cluster says
  otherwise; initdb needs that uid to have a name. The tag starts with the major version,
  which is how the operator tells it.
- MariaDB for mariadb-operator: the catalog's mariadb-11.4.5 in /opt/mariadb, run as the
  official image's mysql user (999, the uid the operator's pods ask for), with that image's
  configuration folders (/etc/mysql/conf.d and mariadb.conf.d, which the operator mounts),
  `mariadb` and `bash` for its probes, and our own entrypoint (mariadb-entrypoint.sh) for
  what it relies on of the official one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from deploy.kube.image import base_rootfs, images_dir, layered, overlaid, wheels
from deploy.kube.layout import HERE, cache_root, run

POSTGRESQL_PACKAGE = "postgresql-15"  # the catalog's postgresql-15: Debian's package
POSTGRESQL_IMAGE = "oltplab.local/postgresql:15"
POSTGRES_ID = 26
POSTGRESQL_TOOLS = ("initdb", "postgres", "pg_ctl", "pg_controldata", "pg_basebackup")
MARIADB_ENGINE = "mariadb-11.4.5"
MARIADB_IMAGE = "oltplab.local/mariadb:11.4.5"
MYSQL_ID = 999
MARIADB_CONFIG = """[client-server]
socket=/run/mysqld/mysqld.sock

[mysqld]
basedir=/opt/mariadb
datadir=/var/lib/mysql
lc-messages-dir=/opt/mariadb/share

!includedir /etc/mysql/conf.d/
!includedir /etc/mysql/mariadb.conf.d/
"""


def database_images() -> list[tuple[str, Path]]:
    """Each image's name and OCI archive, built once per root filesystem."""
    images_dir().mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="database-images-", dir=images_dir().parent))
    try:
        built = wheels(work / "wheels")
        root = base_rootfs([w for w in built if not w.name.startswith("oltplab-")])
        return [
            (POSTGRESQL_IMAGE, postgresql_image(root, work / "postgresql")),
            (MARIADB_IMAGE, mariadb_image(root, work / "mariadb")),
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def postgresql_image(root: Path, work: Path) -> Path:
    archive = images_dir() / f"database-postgresql-{root.name}.oci.tar"
    if archive.exists():
        return archive
    print(f"building {POSTGRESQL_IMAGE} ({POSTGRESQL_PACKAGE}) ...", flush=True)
    upper = work / "upper"
    with overlaid(root, upper, work) as merged:
        chroot = ("chroot", str(merged))
        add_user(merged, POSTGRES_ID, "postgres", "/var/lib/postgresql")
        # The binaries only: no cluster of the package's own, no service.
        write_inside(merged, "etc/postgresql-common/createcluster.conf",
                     "create_main_cluster = false\n")  # fmt: skip
        run(*chroot, "apt-get", "update", "-q")
        run(*chroot, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-q",
            "--no-install-recommends", POSTGRESQL_PACKAGE)  # fmt: skip
        run(*chroot, "apt-get", "clean")
        bin_dir = f"/usr/lib/postgresql/{POSTGRESQL_PACKAGE.split('-')[1]}/bin"
        for tool in POSTGRESQL_TOOLS:
            (merged / "usr" / "local" / "bin" / tool).symlink_to(f"{bin_dir}/{tool}")
    shutil.rmtree(upper / "var" / "lib" / "apt" / "lists", ignore_errors=True)
    layered(root, f"database-postgresql-{root.name}", upper, archive,
            "--config.user", f"{POSTGRES_ID}:{POSTGRES_ID}", named=POSTGRESQL_IMAGE)  # fmt: skip
    return archive


def mariadb_image(root: Path, work: Path) -> Path:
    archive = images_dir() / f"database-mariadb-{root.name}.oci.tar"
    if archive.exists():
        return archive
    print(f"building {MARIADB_IMAGE} ({MARIADB_ENGINE}) ...", flush=True)
    basedir = engine_basedir(MARIADB_ENGINE)
    upper = work / "upper"
    with overlaid(root, upper, work) as merged:
        chroot = ("chroot", str(merged))
        add_user(merged, MYSQL_ID, "mysql", "/var/lib/mysql")
        shutil.copytree(basedir, merged / "opt" / "mariadb", symlinks=True)
        for tool in ("mariadbd", "mariadb", "my_print_defaults", "resolveip"):
            (merged / "usr" / "local" / "bin" / tool).symlink_to(f"/opt/mariadb/bin/{tool}")
        install_db = merged / "usr" / "local" / "bin" / "mariadb-install-db"
        install_db.symlink_to("/opt/mariadb/scripts/mariadb-install-db")
        entrypoint = merged / "usr" / "local" / "bin" / "docker-entrypoint.sh"
        shutil.copy2(HERE / "mariadb-entrypoint.sh", entrypoint)
        entrypoint.chmod(0o755)
        config = merged / "etc" / "mysql"
        for folder in (config / "conf.d", config / "mariadb.conf.d", merged / "run" / "mysqld",
                       merged / "var" / "lib" / "mysql"):  # fmt: skip
            folder.mkdir(parents=True, exist_ok=True)
        write_inside(merged, "etc/mysql/my.cnf", MARIADB_CONFIG)
        run(*chroot, "chown", f"{MYSQL_ID}:{MYSQL_ID}", "/run/mysqld", "/var/lib/mysql")
    layered(root, f"database-mariadb-{root.name}", upper, archive,
            "--config.user", f"{MYSQL_ID}:{MYSQL_ID}",
            "--config.entrypoint", "/usr/local/bin/docker-entrypoint.sh",
            "--config.cmd", "mariadbd", named=MARIADB_IMAGE)  # fmt: skip
    return archive


def write_inside(root: Path, path: str, text: str) -> None:
    """A file of the image's root filesystem, written there and nowhere else: Debian's
    /etc/mysql/my.cnf, for one, is an absolute symbolic link, which followed from outside
    the image names this machine's own file."""
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink():
        target.unlink()
    if not target.parent.resolve().is_relative_to(root.resolve()):
        raise RuntimeError(f"{path}: its folder lies outside the image's root filesystem")
    target.write_text(text)


def add_user(root: Path, number: int, name: str, home: str) -> None:
    """A user of that uid, in the group of that gid: the operators ask for both by number,
    and Debian may have given the gid to a group of its own (26 is tape's)."""
    chroot = ("chroot", str(root))
    if subprocess.run([*chroot, "getent", "group", str(number)], capture_output=True).returncode:
        run(*chroot, "groupadd", "--gid", str(number), name)
    run(*chroot, "useradd", "--uid", str(number), "--gid", str(number), "--home-dir", home,
        "--no-create-home", name)  # fmt: skip


def engine_basedir(engine: str) -> Path:
    """The engine's folder in this machine's cache, fetched first if it is not there."""
    for attempt in range(2):
        for manifest in (cache_root() / "engines").glob("*/manifest.json"):
            found = json.loads(manifest.read_text())
            if found["engine"] == engine:
                return Path(found["basedir"])
        if attempt == 0:
            subprocess.run(
                [sys.executable, "-m", "oltplab", "engines", "fetch", engine], check=True
            )
    raise FileNotFoundError(f"{engine}: not in the cache after `oltplab engines fetch {engine}`")
