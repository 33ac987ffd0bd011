#!/bin/bash
# What mariadb-operator relies on of the official MariaDB image's entrypoint, and no more:
# on a first start, the datadir it mounts at /var/lib/mysql initialised and root's password
# set from MARIADB_ROOT_PASSWORD, for root@localhost (its probes) and for
# root@MARIADB_ROOT_HOST (the operator itself, which creates the other accounts over the
# Service); then the server in the foreground, with the operator's arguments. The password
# reaches the server through a pipe, never a command line.
set -euo pipefail
datadir=/var/lib/mysql
if [ ! -d "$datadir/mysql" ]; then
  : "${MARIADB_ROOT_PASSWORD:?the operator gives the root password in MARIADB_ROOT_PASSWORD}"
  mariadb-install-db --basedir=/opt/mariadb --datadir="$datadir" --skip-test-db \
    --auth-root-authentication-method=normal --skip-name-resolve > /dev/null
  socket=/run/mysqld/initialise.sock
  mariadbd --skip-networking --socket="$socket" --datadir="$datadir" &
  server=$!
  for _ in $(seq 60); do
    mariadb --protocol=socket --socket="$socket" -uroot -e 'SELECT 1' > /dev/null 2>&1 && break
    sleep 1
  done
  # In base64, any password is a plain SQL literal; printf is the shell's own.
  encoded=$(printf %s "$MARIADB_ROOT_PASSWORD" | base64 -w0)
  host=${MARIADB_ROOT_HOST:-%}
  host=${host//[^A-Za-z0-9.%_-]/}
  # root is the operator's administrator, as in the official image: the benchmark account
  # it creates from the MariaDB's username has rights on its own database only.
  mariadb --protocol=socket --socket="$socket" -uroot <<SQL
SET @hash = PASSWORD(FROM_BASE64('${encoded}'));
SET @alter = CONCAT("ALTER USER 'root'@'localhost' IDENTIFIED BY PASSWORD '", @hash, "'");
PREPARE statement FROM @alter;
EXECUTE statement;
SET @create = CONCAT("CREATE USER 'root'@'${host}' IDENTIFIED BY PASSWORD '", @hash, "'");
PREPARE statement FROM @create;
EXECUTE statement;
GRANT ALL PRIVILEGES ON *.* TO 'root'@'${host}' WITH GRANT OPTION;
SHUTDOWN;
SQL
  wait "$server" || true
fi
exec "$@"
