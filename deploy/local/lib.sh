# shellcheck shell=bash
# Helpers shared by deploy/local/{up,down,test}. Source it; do not run it.
#
# Everything here works on a bare Debian machine: what is missing (PostgreSQL,
# Redis) is installed from Debian packages and run as a PRIVATE server under a
# data dir, so no system service is configured or touched. Servers that are
# already there (or given by URL) are used instead.
#
# Env honoured:
#   CARGO_TARGET_DIR  cargo target dir (default ~/.cache/cdapi/target)
#   CDAPI_DATA_DIR    where private servers and local state live (default <repo>/.data)
#   DATABASE_URL      if set, ensure_postgres does nothing
#   PG_ADMIN_URL      if set, ensure_postgres uses that server as is
#   PGPORT            port probed for an existing local PostgreSQL (default 5432)
#   REDIS_URL         if set, ensure_redis does nothing
#   REDIS_PROBE_PORT  port probed for an existing local Redis (default 6379)

CDAPI_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

cdapi_log() { printf '[cdapi] %s\n' "$*" >&2; }
cdapi_die() { printf '[cdapi] error: %s\n' "$*" >&2; exit 1; }

# Outside the clone so every clone and every CI run reuses one build cache.
cdapi_target_dir() {
  printf '%s\n' "${CARGO_TARGET_DIR:-$HOME/.cache/cdapi/target}"
}

# Absolute data dir, created on first use.
cdapi_data_dir() {
  local dir="${CDAPI_DATA_DIR:-$CDAPI_REPO_ROOT/.data}"
  mkdir -p "$dir"
  (cd "$dir" && pwd)
}

# rustup installs cargo in ~/.cargo/bin, which a non-login shell may lack.
cdapi_ensure_cargo() {
  if ! command -v cargo >/dev/null 2>&1 && [[ -x "$HOME/.cargo/bin/cargo" ]]; then
    PATH="$HOME/.cargo/bin:$PATH"
    export PATH
  fi
  command -v cargo >/dev/null 2>&1 \
    || cdapi_die "cargo not found (install a Rust toolchain, e.g. with rustup)"
}

# ---------------------------------------------------------------- ports / waits

# True when nothing accepts connections on 127.0.0.1:PORT.
_port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

free_port() {
  # Binding port 0 lets the kernel pick a port that is really free.
  if command -v python3 >/dev/null 2>&1 && python3 -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()' 2>/dev/null; then
    return 0
  fi
  local port tries
  for ((tries = 0; tries < 200; tries++)); do
    port=$((20000 + RANDOM % 40001))
    if _port_free "$port"; then
      printf '%s\n' "$port"
      return 0
    fi
  done
  cdapi_die "could not find a free TCP port"
}

# wait_tcp HOST PORT SECONDS [PID]: PID, when given, is a process that must stay
# alive meanwhile (so a server that crashes at start fails fast, not after SECONDS).
wait_tcp() {
  local host=$1 port=$2 secs=$3 pid=${4:-} deadline=$((SECONDS + $3))
  until (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; do
    if [[ -n "$pid" ]] && ! kill -0 "$pid" 2>/dev/null; then
      cdapi_die "process $pid exited before $host:$port accepted connections"
    fi
    ((SECONDS < deadline)) || cdapi_die "$host:$port did not accept connections within ${secs}s"
    sleep 0.2
  done
}

# HTTP status of URL, or 000 when nothing answers.
_http_status() {
  if command -v curl >/dev/null 2>&1; then
    curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" || true
  else
    python3 - "$1" <<'PY' 2>/dev/null || printf '000'
import sys, urllib.request, urllib.error
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=2).status, end="")
except urllib.error.HTTPError as e:
    print(e.code, end="")
PY
  fi
}

# wait_http URL SECONDS [PID]: wait for a 200 answer (PID as in wait_tcp).
wait_http() {
  local url=$1 secs=$2 pid=${3:-} deadline=$((SECONDS + $2)) status=000
  while :; do
    status=$(_http_status "$url")
    [[ "$status" == 200 ]] && return 0
    if [[ -n "$pid" ]] && ! kill -0 "$pid" 2>/dev/null; then
      cdapi_die "process $pid exited before $url answered 200"
    fi
    ((SECONDS < deadline)) || cdapi_die "$url did not answer 200 within ${secs}s (last status: $status)"
    sleep 0.3
  done
}

# ------------------------------------------------------------------- packages

_as_root() {
  if [[ $EUID -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

_CDAPI_APT_UPDATED=0
_apt_install() {
  command -v apt-get >/dev/null 2>&1 \
    || cdapi_die "need $* but apt-get is missing: install them yourself, or set the *_URL variables"
  cdapi_log "installing Debian packages: $*"
  if [[ $_CDAPI_APT_UPDATED -eq 0 ]]; then
    _as_root apt-get update -q >&2
    _CDAPI_APT_UPDATED=1
  fi
  _as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >&2
}

# ----------------------------------------------------------------- PostgreSQL

# Highest-versioned Debian server bin dir, else the dir of an initdb on PATH.
_pg_bindir() {
  local dir
  dir=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  if [[ -x "$dir/initdb" ]]; then
    printf '%s\n' "$dir"
  elif command -v initdb >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
  fi
}

# initdb refuses to run as root, so root runs the cluster as the postgres user.
_pg_run() {
  if [[ $EUID -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Home of the private cluster: <datadir>/postgres. As root, the postgres user
# must be able to reach it; a clone under a private dir (e.g. /root, mode 700)
# would not allow that, so such a clone keeps its cluster under /var/tmp instead
# (a stable name derived from the data dir, so reruns and `down` find it).
_pg_home() {
  local base
  base=$(cdapi_data_dir)
  if [[ $EUID -eq 0 ]] && ! runuser -u postgres -- test -x "$base" 2>/dev/null; then
    printf '/var/tmp/cdapi-postgres-%s\n' "$(printf '%s' "$base" | cksum | cut -d ' ' -f 1)"
  else
    printf '%s/postgres\n' "$base"
  fi
}

_pg_answers() { # _pg_answers PORT: a server with a trusting postgres user?
  command -v pg_isready >/dev/null 2>&1 && command -v psql >/dev/null 2>&1 || return 1
  pg_isready -q -t 3 -h 127.0.0.1 -p "$1" || return 1
  [[ "$(PGCONNECT_TIMEOUT=3 psql -X -w -h 127.0.0.1 -p "$1" -U postgres -d postgres \
    -Atc 'select 1' 2>/dev/null)" == 1 ]]
}

ensure_postgres() {
  [[ -n "${DATABASE_URL:-}" ]] && return 0
  [[ -n "${PG_ADMIN_URL:-}" ]] && { export PG_ADMIN_URL; return 0; }

  local port="${PGPORT:-5432}"
  if _pg_answers "$port"; then
    export PG_ADMIN_URL="postgres://postgres@127.0.0.1:$port/postgres"
    cdapi_log "using the PostgreSQL server on 127.0.0.1:$port"
    return 0
  fi

  if [[ -z "$(_pg_bindir)" ]] || ! command -v psql >/dev/null 2>&1 \
    || ! command -v pg_isready >/dev/null 2>&1; then
    _apt_install postgresql postgresql-client
  fi
  local bin home pgdata
  bin=$(_pg_bindir)
  [[ -n "$bin" ]] || cdapi_die "initdb not found even after installing postgresql"
  home=$(_pg_home)
  pgdata="$home/data"
  mkdir -p "$home/socket"
  [[ $EUID -eq 0 ]] && chown -R postgres: "$home"

  if [[ ! -s "$pgdata/PG_VERSION" ]]; then
    cdapi_log "creating a private PostgreSQL cluster in $pgdata"
    _pg_run "$bin/initdb" -D "$pgdata" -U postgres --auth=trust -E UTF8 --locale=C >"$home/initdb.log" \
      || cdapi_die "initdb failed, see $home/initdb.log"
    # Local dev/test server: loopback only, socket kept in our own dir (the
    # system one may not exist or be writable), and durability traded for speed.
    cat >>"$pgdata/postgresql.conf" <<EOF

# added by deploy/local/lib.sh
listen_addresses = '127.0.0.1'
unix_socket_directories = '$home/socket'
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
  fi

  if _pg_run "$bin/pg_ctl" -D "$pgdata" status >/dev/null 2>&1; then
    # Already running (an earlier run): line 4 of postmaster.pid is its port.
    port=$(sed -n 4p "$pgdata/postmaster.pid")
  else
    # Reuse the recorded port so URLs stay stable, unless something took it.
    port=$(cat "$home/port" 2>/dev/null || true)
    if [[ -z "$port" ]] || ! _port_free "$port"; then
      port=$(free_port)
    fi
    printf '%s\n' "$port" >"$home/port"
    cdapi_log "starting the private PostgreSQL on 127.0.0.1:$port"
    _pg_run "$bin/pg_ctl" -D "$pgdata" -l "$home/postgres.log" -w -t 60 -o "-p $port" start >/dev/null \
      || cdapi_die "PostgreSQL did not start, see $home/postgres.log"
  fi
  _pg_answers "$port" || cdapi_die "the private PostgreSQL on port $port does not answer"
  export PG_ADMIN_URL="postgres://postgres@127.0.0.1:$port/postgres"
}

# The fault tests start a PostgreSQL server of their own (initdb, pg_ctl): its binaries must be
# here even when the tests' shared server runs elsewhere.
ensure_postgres_binaries() {
  [[ -n "$(_pg_bindir)" ]] || _apt_install postgresql
}

stop_private_postgres() {
  local bin home
  bin=$(_pg_bindir)
  home=$(_pg_home)
  [[ -n "$bin" && -s "$home/data/PG_VERSION" ]] || return 0
  if _pg_run "$bin/pg_ctl" -D "$home/data" status >/dev/null 2>&1; then
    cdapi_log "stopping the private PostgreSQL ($home/data)"
    _pg_run "$bin/pg_ctl" -D "$home/data" -m fast -w stop >/dev/null
  fi
}

# URL of database NAME on the PG_ADMIN_URL server (its path replaced, query kept).
database_url() {
  local name=$1 url=${PG_ADMIN_URL:?PG_ADMIN_URL is not set} base query rest
  base=${url%%\?*}
  query=${url#"$base"}
  rest=${base#*://}
  [[ "$rest" == */* ]] && base=${base%/*}
  printf '%s/%s%s\n' "$base" "$name" "$query"
}

database_exists() {
  [[ "$(psql -X -w "${PG_ADMIN_URL:?PG_ADMIN_URL is not set}" -At -v ON_ERROR_STOP=1 -v name="$1" \
    <<<"select 1 from pg_database where datname = :'name'")" == 1 ]]
}

# create_database NAME: (re)create NAME empty and print its URL.
create_database() {
  psql -X -w "${PG_ADMIN_URL:?PG_ADMIN_URL is not set}" -q -v ON_ERROR_STOP=1 -v name="$1" >/dev/null <<'SQL'
SET client_min_messages = warning;
DROP DATABASE IF EXISTS :"name" WITH (FORCE);
CREATE DATABASE :"name";
SQL
  database_url "$1"
}

# ---------------------------------------------------------------------- Redis

_redis_ping() { # _redis_ping PORT (timeout: a non-Redis listener never answers)
  command -v redis-cli >/dev/null 2>&1 \
    && [[ "$(timeout 3 redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" == PONG ]]
}

# Port of the private Redis if it is running, else nothing.
_redis_private_port() {
  local dir port pid
  dir="$(cdapi_data_dir)/redis"
  port=$(cat "$dir/port" 2>/dev/null || true)
  pid=$(cat "$dir/redis.pid" 2>/dev/null || true)
  if [[ -n "$port" && -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && _redis_ping "$port"; then
    printf '%s\n' "$port"
  fi
}

ensure_redis() {
  [[ -n "${REDIS_URL:-}" ]] && return 0
  local probe="${REDIS_PROBE_PORT:-6379}" dir port
  if _redis_ping "$probe"; then
    export REDIS_URL="redis://127.0.0.1:$probe"
    cdapi_log "using the Redis server on 127.0.0.1:$probe"
    return 0
  fi
  if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
    _apt_install redis-server
  fi
  dir="$(cdapi_data_dir)/redis"
  mkdir -p "$dir"
  port=$(_redis_private_port)
  if [[ -z "$port" ]]; then
    port=$(cat "$dir/port" 2>/dev/null || true)
    if [[ -z "$port" ]] || ! _port_free "$port"; then
      port=$(free_port)
    fi
    printf '%s\n' "$port" >"$dir/port"
    cdapi_log "starting a private Redis on 127.0.0.1:$port"
    # A cache only: no persistence, loopback only.
    redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save "" --appendonly no \
      --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" \
      || cdapi_die "redis-server did not start, see $dir/redis.log"
    local deadline=$((SECONDS + 15))
    until _redis_ping "$port"; do
      ((SECONDS < deadline)) || cdapi_die "the private Redis does not answer, see $dir/redis.log"
      sleep 0.2
    done
  fi
  export REDIS_URL="redis://127.0.0.1:$port"
}

stop_private_redis() {
  local dir port pid
  dir="$(cdapi_data_dir)/redis"
  port=$(_redis_private_port)
  [[ -n "$port" ]] || return 0
  pid=$(<"$dir/redis.pid")
  cdapi_log "stopping the private Redis on 127.0.0.1:$port"
  timeout 5 redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1 || true
  local deadline=$((SECONDS + 10))
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS >= deadline)); then kill -KILL "$pid" 2>/dev/null || true; break; fi
    sleep 0.2
  done
}

# ------------------------------------------------------------- test peers

# A Python with aiosmtpd (the real SMTP server the tests deliver mail to), schemathesis
# (run against /server/specs/oas by tests/tests/openapi.rs) and Playwright (driving Debian's
# chromium in tests/tests/studio.rs; it never downloads a browser of its own): CDAPI_PYTHON if given, the system
# python3 if it has both, else a venv under ~/.cache/cdapi/venv (created once). Exports
# CDAPI_PYTHON.
ensure_test_python() {
  if [[ -n "${CDAPI_PYTHON:-}" ]]; then export CDAPI_PYTHON; return 0; fi
  command -v python3 >/dev/null 2>&1 || _apt_install python3 python3-venv
  local need='import aiosmtpd, schemathesis, moto.server, playwright.sync_api'
  if python3 -c "$need" 2>/dev/null; then export CDAPI_PYTHON=python3; return 0; fi
  local venv="$HOME/.cache/cdapi/venv"
  if ! "$venv/bin/python" -c "$need" 2>/dev/null; then
    cdapi_log "installing aiosmtpd (the tests' SMTP server), schemathesis (the OpenAPI fuzzer) and moto (the tests' S3 server) into $venv"
    [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv" 2>/dev/null || { _apt_install python3-venv; python3 -m venv "$venv"; }
    "$venv/bin/pip" install -q --disable-pip-version-check 'aiosmtpd==1.4.6' 'schemathesis==4.32.5' 'hypothesis==6.170.15' 'moto[s3,server]==5.2.5' 'playwright==1.65.2' >&2 \
      || cdapi_die "pip install aiosmtpd schemathesis moto playwright failed"
  fi
  export CDAPI_PYTHON="$venv/bin/python"
}

# Debian's Chromium, the browser of the Data Studio tests (tests/tests/studio.rs). Exports
# CDAPI_CHROMIUM.
ensure_chromium() {
  local bin="${CDAPI_CHROMIUM:-}"
  [[ -n "$bin" ]] || bin="$(command -v chromium || true)"
  if [[ -z "$bin" ]]; then
    _apt_install chromium
    bin="$(command -v chromium)"
  fi
  export CDAPI_CHROMIUM="$bin"
}

# Node.js and the JavaScript peers of the tests (tests/js: the Directus SDK, oidc-provider),
# installed from the lock file when it changed since the last install.
ensure_test_node() {
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || _apt_install nodejs npm
  local dir="$CDAPI_REPO_ROOT/tests/js"
  if ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.installed-lock.json" 2>/dev/null; then
    cdapi_log "installing the tests' JavaScript packages (npm ci in tests/js)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2) || cdapi_die "npm ci in tests/js failed"
    cp "$dir/package-lock.json" "$dir/node_modules/.installed-lock.json"
  fi
}

# The Directus Data Studio (@directus/app 13.4.0, the app of directus 11.3.5; BUSL-1.1, never
# part of this repository or its images) for `deploy/local/up --studio`: STUDIO_DIR when set,
# else installed once from npm into ~/.cache/cdapi/studio. Prints the dist directory.
ensure_studio() {
  if [[ -n "${STUDIO_DIR:-}" ]]; then
    [[ -f "$STUDIO_DIR/index.html" ]] || cdapi_die "STUDIO_DIR=$STUDIO_DIR has no index.html"
    echo "$STUDIO_DIR"
    return 0
  fi
  local dir="$HOME/.cache/cdapi/studio"
  if [[ ! -f "$dir/node_modules/@directus/app/dist/index.html" ]]; then
    command -v npm >/dev/null 2>&1 || _apt_install nodejs npm
    cdapi_log "installing the Data Studio (@directus/app@13.4.0, licensed BUSL-1.1) into $dir"
    mkdir -p "$dir"
    [[ -f "$dir/package.json" ]] || echo '{"name": "cdapi-studio", "private": true}' >"$dir/package.json"
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error --ignore-scripts --omit=peer @directus/app@13.4.0 >&2) \
      || cdapi_die "npm install @directus/app@13.4.0 into $dir failed"
  fi
  echo "$dir/node_modules/@directus/app/dist"
}

# The real Directus 11.3.5, the peer of the differential suite (tests/tests/directus_differential.rs),
# installed once into CDAPI_DIRECTUS_DIR (default ~/.cache/cdapi/directus-11.3.5): `npm install
# --ignore-scripts`, then only isolated-vm's native module is built (Directus loads it at start;
# about 2 minutes on 2 cores). CDAPI_DIRECTUS=skip leaves it out. A failed install does not stop
# the run: CDAPI_DIRECTUS_UNAVAILABLE carries the reason and the test reports itself SKIPPED.
ensure_directus_peer() {
  local dir="${CDAPI_DIRECTUS_DIR:-$HOME/.cache/cdapi/directus-11.3.5}"
  export CDAPI_DIRECTUS_DIR="$dir"
  if [[ "${CDAPI_DIRECTUS:-}" == skip ]]; then
    export CDAPI_DIRECTUS_UNAVAILABLE="CDAPI_DIRECTUS=skip was given"
    return 0
  fi
  if [[ -f "$dir/node_modules/isolated-vm/out/isolated_vm.node" ]] \
    && grep -q '"version": "11.3.5"' "$dir/node_modules/directus/package.json" 2>/dev/null; then
    return 0
  fi
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || _apt_install nodejs npm
  command -v make >/dev/null 2>&1 && command -v g++ >/dev/null 2>&1 || _apt_install make g++
  cdapi_log "installing the differential suite's peer directus@11.3.5 into $dir (once; a few minutes)"
  mkdir -p "$dir"
  [[ -f "$dir/package.json" ]] || echo '{"name": "directus-peer", "private": true}' >"$dir/package.json"
  if ! (cd "$dir" && npm install --no-audit --no-fund --loglevel=error --ignore-scripts directus@11.3.5 >&2 \
    && npm rebuild isolated-vm >&2); then
    export CDAPI_DIRECTUS_UNAVAILABLE="npm install of directus@11.3.5 into $dir failed (see the log above)"
    cdapi_log "$CDAPI_DIRECTUS_UNAVAILABLE: the differential suite will be skipped"
  fi
}
