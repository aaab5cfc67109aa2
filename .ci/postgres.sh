#!/bin/sh
# Starts a local PostgreSQL for the store's contract tests and prints the
# variable that enables them.
#
# It runs as root on a Debian machine. It installs PostgreSQL from Debian's
# packages when missing, creates and starts the "main" cluster listening on
# 127.0.0.1:5432, and creates the login role and database "chargeonce" (the
# role may create databases: every test gets a fresh one). Running it again
# changes nothing.
#
#   eval "$(.ci/postgres.sh | tail -n 1)"  # or: export "$(.ci/postgres.sh | tail -n 1)"
set -eu

port=5432
role=chargeonce
password=chargeonce
database=chargeonce

if [ "$(id -u)" -ne 0 ]; then
	echo "postgres.sh: run as root (it installs packages and starts a server)" >&2
	exit 1
fi

if ! command -v pg_ctlcluster >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends postgresql
fi

# The newest installed server version, such as 15.
version=$(ls /usr/lib/postgresql | sort -n | tail -n 1)

if ! pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "main" { found = 1 } END { exit !found }'; then
	pg_createcluster "$version" main --port "$port"
fi
# Debian's postgresql.conf includes conf.d, so our settings live in a file of
# our own that is rewritten on every run.
cat >"/etc/postgresql/$version/main/conf.d/chargeonce.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
CONF

if ! pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "main" && $4 == "online" { found = 1 } END { exit !found }'; then
	pg_ctlcluster "$version" main start
fi

tries=0
until pg_isready -q -h 127.0.0.1 -p "$port"; do
	tries=$((tries + 1))
	if [ "$tries" -ge 60 ]; then
		echo "postgres.sh: PostgreSQL did not accept connections on 127.0.0.1:$port within 30s" >&2
		exit 1
	fi
	sleep 0.5
done

psql_admin() {
	runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -p "$port" "$@"
}

psql_admin -d postgres <<SQL
DO \$\$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$role') THEN
		CREATE ROLE $role LOGIN CREATEDB PASSWORD '$password';
	ELSE
		ALTER ROLE $role LOGIN CREATEDB PASSWORD '$password';
	END IF;
END
\$\$;
-- A test drops its database WITH (FORCE), which must also end an autovacuum
-- worker that has just started there; only pg_signal_backend may. A second
-- run's grant is a no-op, and its notice says nothing new.
SET client_min_messages TO WARNING;
GRANT pg_signal_backend TO $role;
SQL

if [ -z "$(psql_admin -d postgres -tA -c "SELECT 1 FROM pg_database WHERE datname = '$database'")" ]; then
	psql_admin -d postgres -c "CREATE DATABASE $database OWNER $role"
fi

echo "CHARGEONCE_TEST_POSTGRES_URL=postgres://$role:$password@127.0.0.1:$port/$database?sslmode=disable"
