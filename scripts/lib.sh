# Shared by scripts/setup, scripts/run and scripts/test (sourced, not run).

# Where the installed tools live: never in the work tree.
TOOLS="${BETTER_COMPUTE_TOOLS:-$HOME/.cache/better-compute}"
export PATH="$HOME/.cargo/bin:$TOOLS/node_modules/.bin:$PATH"

# The commit builds name in their version (`better-compute --version`, the server's first log
# line); empty outside a git checkout.
BETTER_COMPUTE_COMMIT="$(git describe --always --dirty --abbrev=12 2>/dev/null || true)"
export BETTER_COMPUTE_COMMIT

# Prints a step heading on stderr.
step() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# Prints a free TCP port on 127.0.0.1 (nothing answers on it right now).
free_port() {
  local port
  for _ in $(seq 100); do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  echo "no free port found" >&2
  return 1
}

# The folder of initdb and pg_ctl: from PATH, else the newest of Debian's postgresql packages.
pg_bindir() {
  if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
    dirname "$(command -v initdb)"
  else
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$dir" ] || { echo "PostgreSQL not found: run scripts/setup --test" >&2; return 1; }
    echo "$dir"
  fi
}

# Starts a throwaway PostgreSQL cluster (temporary folder, free port, trust auth, loopback
# only) and exports BETTER_COMPUTE_TEST_POSTGRES. The caller stops it with stop_postgres.
# initdb refuses to run as root, so as root the cluster belongs to the `postgres` user.
start_postgres() {
  local bin port
  bin=$(pg_bindir)
  port=$(free_port)
  PG_TMP=$(mktemp -d "${TMPDIR:-/tmp}/better-compute-pg.XXXXXX")
  PG_AS=()
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$PG_TMP"
    PG_AS=(runuser -u postgres --)
  fi
  "${PG_AS[@]}" "$bin/initdb" -D "$PG_TMP/data" -U postgres -A trust -E UTF8 --no-sync \
    >"$PG_TMP/initdb.log" 2>&1 || { cat "$PG_TMP/initdb.log" >&2; return 1; }
  "${PG_AS[@]}" "$bin/pg_ctl" -D "$PG_TMP/data" -l "$PG_TMP/server.log" -w -t 60 \
    -o "-p $port -k $PG_TMP -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" \
    start >/dev/null || { cat "$PG_TMP/server.log" >&2; return 1; }
  PG_BIN=$bin
  export BETTER_COMPUTE_TEST_POSTGRES="postgres://postgres@127.0.0.1:$port/postgres"
}

# Stops the cluster of start_postgres, if any, and removes its folder.
stop_postgres() {
  [ -n "${PG_TMP:-}" ] || return 0
  "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_TMP/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$PG_TMP"
  PG_TMP=
}
