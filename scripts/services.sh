#!/usr/bin/env bash
# Make sure PostgreSQL (127.0.0.1:5432, user postgres, trust) and Redis (127.0.0.1:6379) run:
# start them where they are installed but stopped, install them with apt where they are not.
# Says clearly what is missing when it cannot.
set -uo pipefail

pg_up() { python3 - <<'PY' 2>/dev/null
import socket; socket.create_connection(("127.0.0.1", 5432), timeout=2).close()
PY
}
redis_up() { python3 - <<'PY' 2>/dev/null
import socket
s = socket.create_connection(("127.0.0.1", 6379), timeout=2); s.sendall(b"PING\r\n")
assert s.recv(16).startswith(b"+PONG")
PY
}
can_install() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; }

wait_for() {  # wait_for CHECK SECONDS
  for _ in $(seq 1 "$2"); do "$1" && return 0; sleep 1; done
  return 1
}

if ! pg_up; then
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1 && can_install; then
    echo "Installing PostgreSQL with apt-get" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  if ls /etc/postgresql/*/main >/dev/null 2>&1; then
    echo "Starting PostgreSQL" >&2
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start || true
  fi
  wait_for pg_up 30 || { echo "MISSING: PostgreSQL is not reachable on 127.0.0.1:5432 and could not be started." >&2; exit 3; }
fi

if ! redis_up; then
  if ! command -v redis-server >/dev/null && can_install; then
    echo "Installing Redis with apt-get" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  fi
  if command -v redis-server >/dev/null; then
    echo "Starting Redis" >&2
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
  fi
  wait_for redis_up 30 || { echo "MISSING: Redis is not reachable on 127.0.0.1:6379 and could not be started." >&2; exit 3; }
fi

# The PostgreSQL outage test runs a throwaway server of its own.
if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  echo "MISSING: initdb (PostgreSQL server binaries) is not installed." >&2
  exit 3
fi
