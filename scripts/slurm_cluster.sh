#!/usr/bin/env bash
# A real single-node SLURM cluster (slurmctld + slurmd + slurmdbd with MariaDB accounting, munge)
# on this machine, for the cluster tests. Debian/Ubuntu, root, no init system needed.
#   bash scripts/slurm_cluster.sh start    # install (apt) if needed, configure, start, wait for `srun true`
#   bash scripts/slurm_cluster.sh status
#   bash scripts/slurm_cluster.sh stop
# Facts this relies on (established on a machine of this kind): every daemon is started by hand;
# proctrack/linuxproc + task/none + select/cons_tres avoid cgroups; accounting (slurmdbd) is needed
# for submitit to see job states; AuthInfo=cred_expire=10 lets a requeued job start again quickly.
# Every address is the loopback one: a fresh machine's host name need not resolve (no DNS, not in
# /etc/hosts), and a node whose controller it cannot find stays down. A cold start (no slurmctld and
# no slurmdbd running) begins from an empty job state and an empty job accounting: jobs saved by an
# earlier life of the machine would hold the node, and their job ids would be reused.
set -euo pipefail

STATE=/var/lib/pilot-slurm
CONF_DIR=/etc/slurm
HOST=$(hostname -s)
CPUS=$(nproc)
MEM_MB=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
DB_PASS=pilot-slurm-db

log() { echo "[slurm_cluster] $*"; }

# a daemon counts as running only if a live (not zombie) process has its name: processes of an
# earlier session that were killed can linger as zombies, and pgrep alone would match them
running() {
  local pid
  for pid in $(pgrep -x "$1"); do
    [ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" != "Z" ] && return 0
  done
  return 1
}

install_packages() {
  if command -v slurmctld >/dev/null && command -v slurmdbd >/dev/null && command -v mariadbd >/dev/null \
     && command -v munged >/dev/null; then
    return
  fi
  log "installing slurm, munge and mariadb (apt)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmctld slurmd slurm-client slurmdbd munge \
    mariadb-server >/dev/null
}

start_munge() {
  if running munged && munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then return; fi
  mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
  [ -s /etc/munge/munge.key ] || { mungekey --create --keyfile /etc/munge/munge.key 2>/dev/null \
    || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none; }
  chown -R munge:munge /etc/munge /var/lib/munge /var/log/munge /run/munge
  chmod 0700 /etc/munge /var/lib/munge /var/log/munge
  chmod 0400 /etc/munge/munge.key
  chmod 0755 /run/munge
  runuser -u munge -- /usr/sbin/munged --force   # --force: stale socket/pid files of a killed munged
  for _ in $(seq 20); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.5; done
  log "munged started"
}

start_mariadb() {
  if running mariadbd || running mysqld; then return; fi
  mkdir -p /run/mysqld /var/lib/mysql
  chown -R mysql:mysql /run/mysqld /var/lib/mysql   # its own user must write data and pid
  [ -d /var/lib/mysql/mysql ] || mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
  runuser -u mysql -- mariadbd --datadir=/var/lib/mysql --socket=/run/mysqld/mysqld.sock \
    --pid-file=/run/mysqld/mysqld.pid --skip-networking=0 --bind-address=127.0.0.1 \
    >/var/log/pilot-mariadb.log 2>&1 &
  for _ in $(seq 60); do mariadb -e "select 1" >/dev/null 2>&1 && break; sleep 0.5; done
  log "mariadb started"
}

create_accounting_db() {
  mariadb -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
              CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '${DB_PASS}';
              GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"
}

clear_saved_jobs() {
  rm -rf "${STATE:?}/ctld"/*
  mariadb -e "DROP DATABASE IF EXISTS slurm_acct_db"
  log "cold start: saved jobs and job accounting cleared"
}

write_configs() {
  mkdir -p "$CONF_DIR" "$STATE"/{ctld,d,log}
  cat > "$CONF_DIR/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=${DB_PASS}
StorageLoc=slurm_acct_db
LogFile=${STATE}/log/slurmdbd.log
PidFile=${STATE}/slurmdbd.pid
EOF
  chmod 600 "$CONF_DIR/slurmdbd.conf"
  cat > "$CONF_DIR/slurm.conf" <<EOF
ClusterName=pilot
SlurmctldHost=${HOST}(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
AuthInfo=cred_expire=10
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
StateSaveLocation=${STATE}/ctld
SlurmdSpoolDir=${STATE}/d
SlurmctldPidFile=${STATE}/slurmctld.pid
SlurmdPidFile=${STATE}/slurmd.pid
SlurmctldLogFile=${STATE}/log/slurmctld.log
SlurmdLogFile=${STATE}/log/slurmd.log
ReturnToService=2
MinJobAge=300
JobRequeue=1
KillWait=5
NodeName=${HOST} NodeAddr=127.0.0.1 NodeHostname=${HOST} CPUs=${CPUS} RealMemory=${MEM_MB} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

# a job's own processes find each other by the node's name (submitit sets MASTER_ADDR from the node
# list), so the name must resolve on this single-node cluster too
resolve_host_name() {
  getent hosts "$HOST" >/dev/null && return
  echo "127.0.0.1 ${HOST}" >> /etc/hosts
  log "${HOST} did not resolve: added to /etc/hosts as 127.0.0.1"
}

start() {
  install_packages
  resolve_host_name
  start_munge
  start_mariadb
  write_configs
  if ! running slurmctld && ! running slurmdbd; then clear_saved_jobs; fi
  create_accounting_db
  running slurmdbd || { slurmdbd; log "slurmdbd started"; }
  for _ in $(seq 60); do sacctmgr -i show cluster >/dev/null 2>&1 && break; sleep 0.5; done
  sacctmgr -i add cluster pilot >/dev/null 2>&1 || true
  running slurmctld || { slurmctld; log "slurmctld started"; }
  running slurmd || { slurmd; log "slurmd started"; }
  for _ in $(seq 60); do    # jobs submitted to a node still marked down would pend
    if timeout 10 srun -N1 -n1 true >/dev/null 2>&1; then log "cluster ready (srun true ok)"; return 0; fi
    scontrol update nodename="${HOST}" state=resume >/dev/null 2>&1 || true
    sleep 1
  done
  log "cluster did not become ready; logs in ${STATE}/log"
  explain_not_ready
  exit 1
}

# what a failed start leaves to read: the node's state and reason, the queue, each log's end
explain_not_ready() {
  sinfo -N -o "%N %t %E" 2>&1 || true
  squeue 2>&1 || true
  for f in "${STATE}"/log/*.log /var/log/pilot-mariadb.log; do
    [ -f "$f" ] && { echo "--- tail of $f"; tail -n 15 "$f"; }
  done
}

stop() {
  for daemon in slurmd slurmctld slurmdbd mariadbd munged; do pkill -x "$daemon" 2>/dev/null || true; done
  log "stopped"
}

status() {
  for daemon in munged mariadbd slurmdbd slurmctld slurmd; do
    printf '%-10s %s\n' "$daemon" "$(running "$daemon" && echo running || echo stopped)"
  done
  sinfo 2>/dev/null || true
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
