#!/usr/bin/env bash
# Copyright 2026 The ironic-partition Authors.
# SPDX-License-Identifier: Apache-2.0
#
# Make sure the SQL servers the functional tests use are running, following
# OpenStack's tools/test-setup.sh convention:
#
# * PostgreSQL on 127.0.0.1:5432, user postgres without a password;
# * MariaDB on 127.0.0.1:3306, user root without a password;
# * on both, the user openstack_citest (password openstack_citest) that
#   oslo.db's opportunistic test fixtures use;
# * RabbitMQ on 127.0.0.1:5672, user guest/guest, with rabbitmqctl (the
#   nova lane creates and deletes a virtual host per run).
#
# Where a server already answers, it is left running as it is (only the
# test user is added). Where it does not, it
# is installed from Debian packages (root needed) and started, so that the
# tests never skip silently for want of a server.
set -euo pipefail

port_open() {
    python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
s.settimeout(2)
try:
    s.connect(('127.0.0.1', int(sys.argv[1])))
except OSError:
    sys.exit(1)
PY
}

wait_port() {
    local port=$1 i
    for i in $(seq 1 60); do
        port_open "$port" && return 0
        sleep 1
    done
    echo "nothing answers on 127.0.0.1:$port after 60 s" >&2
    return 1
}

need_root() {
    if [ "$(id -u)" != 0 ]; then
        echo "$1 is not running on 127.0.0.1 and installing it needs root" >&2
        exit 1
    fi
}

apt_updated=
apt_install() {
    if [ -z "$apt_updated" ]; then
        apt-get update -q
        apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"
}

# Install packages without starting their system services (a policy-rc.d
# that refuses every start, where there is none): the tests start the
# servers they need themselves.
apt_install_without_services() {
    local policy=/usr/sbin/policy-rc.d added=
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' > "$policy"
        chmod +x "$policy"
        added=1
    fi
    apt_install --no-install-recommends "$@"
    if [ -n "$added" ]; then
        rm -f "$policy"
    fi
}

if ! port_open 5432; then
    need_root PostgreSQL
    command -v pg_ctlcluster >/dev/null || apt_install postgresql
    ver=$(ls /etc/postgresql | sort -V | tail -n 1)
    hba=/etc/postgresql/$ver/main/pg_hba.conf
    if ! grep -q '^host all all 127.0.0.1/32 trust' "$hba"; then
        sed -i '1i host all all 127.0.0.1/32 trust' "$hba"
        sed -i '1i host all all ::1/128 trust' "$hba"
    fi
    pg_ctlcluster --skip-systemctl-redirect "$ver" main start || \
        pg_ctlcluster --skip-systemctl-redirect "$ver" main restart
    wait_port 5432
fi

if ! port_open 3306; then
    need_root MariaDB
    command -v mariadbd >/dev/null || apt_install mariadb-server
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
    wait_port 3306
    # Debian's root logs in through the unix socket only; let the tests in
    # over TCP without a password, as on the CI machines.
    mariadb -uroot -e "ALTER USER root@localhost IDENTIFIED VIA \
        mysql_native_password USING PASSWORD('') OR unix_socket; \
        FLUSH PRIVILEGES;"
fi

if ! port_open 5672; then
    need_root RabbitMQ
    command -v rabbitmq-server >/dev/null || apt_install rabbitmq-server
    # NOTE(ironic-partition): no systemd in containers; the server
    # daemonizes itself with -detached.
    rabbitmq-server -detached || true
    wait_port 5672
fi
if ! command -v rabbitmqctl >/dev/null; then
    echo "RabbitMQ answers on 5672 but rabbitmqctl is missing: the nova" \
        "lane needs it to create its virtual hosts" >&2
    exit 1
fi

# The opportunistic database tests (oslo.db's test_fixtures) log in as the
# conventional user openstack_citest, password openstack_citest, and
# create their databases with it. Create it where it is missing; an
# existing one is only given the rights it needs.
CITEST=openstack_citest
if ! command -v psql >/dev/null; then
    need_root "psql (PostgreSQL client)"
    apt_install postgresql-client
fi
psql -h 127.0.0.1 -U postgres -d postgres -q -v ON_ERROR_STOP=1 <<SQL
DO \$\$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$CITEST') THEN
        CREATE ROLE $CITEST LOGIN PASSWORD '$CITEST';
    END IF;
END
\$\$;
ALTER ROLE $CITEST WITH LOGIN SUPERUSER PASSWORD '$CITEST';
SQL
mysql_client=$(command -v mariadb || command -v mysql || true)
if [ -z "$mysql_client" ]; then
    need_root "mariadb (MariaDB client)"
    apt_install mariadb-client
    mysql_client=$(command -v mariadb || command -v mysql)
fi
for citest_host in "%" localhost; do
    "$mysql_client" -h 127.0.0.1 -uroot -e "
        CREATE USER IF NOT EXISTS '$CITEST'@'$citest_host'
            IDENTIFIED BY '$CITEST';
        GRANT ALL PRIVILEGES ON *.* TO '$CITEST'@'$citest_host'
            WITH GRANT OPTION;"
done
"$mysql_client" -h 127.0.0.1 -uroot -e "FLUSH PRIVILEGES;"

# libfaketime, for the fault tests' agents whose wall clock is off
# (ironic_partition/tests/functional/agents.py looks for it here).
if ! ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1; then
    need_root libfaketime
    apt_install faketime
fi

# Prometheus and promtool, for the metrics tests (a server of the test's
# own scrapes the nova lane's computes; promtool checks the example alert
# rules). Debian's package, without starting its system service: the
# tests start servers of their own.
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null
then
    need_root Prometheus
    apt_install_without_services prometheus
fi

# A three-node Galera cluster behind HAProxy, for the Galera fixture
# (ironic_partition/testing/services/galera.py): MariaDB's server binaries, the
# Galera 4 provider, rsync for the rsync SST, HAProxy in front, and
# libfaketime for a node whose clock is off. The fixture runs every one
# of them as its own child process, on its own ports and data
# directories; the packages' system services are never started (the
# same policy-rc.d guard as for Prometheus), so installing them neither
# opens a system HAProxy nor touches the MariaDB on 127.0.0.1:3306.
galera_missing=
for path in /usr/sbin/mariadbd /usr/bin/mariadb-install-db \
    /usr/bin/wsrep_sst_rsync /usr/lib/galera/libgalera_smm.so \
    /usr/bin/rsync /usr/sbin/haproxy; do
    [ -e "$path" ] || galera_missing=1
done
if ! ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1; then
    galera_missing=1
fi
if [ -n "$galera_missing" ]; then
    need_root "Galera and HAProxy"
    apt_install_without_services mariadb-server galera-4 rsync haproxy \
        libfaketime
fi

echo "PostgreSQL 127.0.0.1:5432, MariaDB 127.0.0.1:3306 (both with the" \
    "user $CITEST) and RabbitMQ 127.0.0.1:5672 are up; libfaketime," \
    "Prometheus, Galera and HAProxy are installed."
