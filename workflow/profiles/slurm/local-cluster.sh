#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, set up the way real sites run one: munge authentication,
# MariaDB + slurmdbd accounting (so `sacct` works), slurmctld and slurmd. For trying the SLURM profile
# (workflow/profiles/slurm) end to end; not for production.
#
#   workflow/profiles/slurm/local-cluster.sh [up]   install what is missing (Debian/Ubuntu, as root), write
#                                                  the configuration, start what is not running (idempotent)
#   workflow/profiles/slurm/local-cluster.sh status daemons, node state, accounting; exit 1 unless all is up
#   workflow/profiles/slurm/local-cluster.sh check  sbatch --wrap hostname; wait until sacct says COMPLETED
#   workflow/profiles/slurm/local-cluster.sh down   stop the daemons this script started (by their pid files)
#
# Needs root and apt-get (Debian 12: slurm-wlm 22.05, slurmdbd, mariadb-server, munge). Works without systemd
# (containers): each daemon is started directly and tracked by its pid file. Settings: CLUSTER_NAME,
# PARTITION (default main), DB_PASSWORD. The daemons do not outlive the machine; nothing in CI depends on them.
set -euo pipefail

CLUSTER_NAME=${CLUSTER_NAME:-dpvae-local}
PARTITION=${PARTITION:-main}
ACCOUNT=${ACCOUNT:-dpvae}
DB_NAME=slurm_acct_db
DB_USER=slurm
DB_PASSWORD=${DB_PASSWORD:-dpvae-local-slurmdbd}
NODE=$(hostname -s)
PACKAGES=(munge mariadb-server slurm-wlm slurmdbd)
CONF_DIR=/etc/slurm
RUN_DIR=/run/slurm
STATE_DIR=/var/lib/slurm
LOG_DIR=/var/log/slurm
MUNGE_PID=/run/munge/munged.pid
MYSQL_PID=/run/mysqld/mysqld.pid
MYSQL_SOCKET=/run/mysqld/mysqld.sock

log() { printf '[local-cluster] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ---- processes, tracked by pid file ---------------------------------------------------------------------
alive() {  # alive PIDFILE: the pid in it is a running process
    [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

poll() {  # poll SECONDS COMMAND...: until COMMAND succeeds (0), or 1 after SECONDS
    local seconds=$1
    shift
    for ((i = 0; i < seconds * 2; i++)); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.5
    done
    return 1
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: poll, or stop with an error naming what failed
    local seconds=$1 what=$2
    shift 2
    poll "$seconds" "$@" || die "$what did not come up within ${seconds}s (logs: $LOG_DIR, /var/log/mysql, /var/log/munge)"
}

stop_pidfile() {  # stop_pidfile NAME PIDFILE: TERM, wait, KILL if it lingers
    local name=$1 pidfile=$2 pid
    if ! alive "$pidfile"; then log "$name: not running"; return 0; fi
    pid=$(cat "$pidfile")
    log "$name: stopping pid $pid"
    kill -TERM "$pid"
    for ((i = 0; i < 60; i++)); do kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; return 0; }; sleep 0.5; done
    log "$name: still running after 30 s; killing pid $pid"
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$pidfile"
}

# ---- installation and configuration ---------------------------------------------------------------------
require_root() {
    [[ $(id -u) -eq 0 ]] || die "run as root (it installs packages and starts system daemons)"
}

install_packages() {
    local missing=()
    for package in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    command -v apt-get >/dev/null || die "missing packages ${missing[*]} and no apt-get to install them"
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

write_if_changed() {  # write_if_changed PATH MODE < content; prints "changed" when it wrote
    local path=$1 mode=$2 tmp
    tmp=$(mktemp "$path.XXXXXX")
    cat >"$tmp"
    chmod "$mode" "$tmp"
    if [[ -f $path ]] && cmp -s "$tmp" "$path"; then rm -f "$tmp"; return 0; fi
    mv -f "$tmp" "$path"
    echo changed
}

node_memory_mb() {  # 90 % of the physical memory, leaving room for the daemons
    awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.9}' /proc/meminfo
}

slurm_conf() {
    cat <<EOF
# Written by workflow/profiles/slurm/local-cluster.sh: a one-node cluster with accounting.
ClusterName=$CLUSTER_NAME
SlurmctldHost=$NODE
SlurmUser=root
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SlurmctldPidFile=$RUN_DIR/slurmctld.pid
SlurmdPidFile=$RUN_DIR/slurmd.pid
SlurmdSpoolDir=$STATE_DIR/slurmd
StateSaveLocation=$STATE_DIR/slurmctld
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# without a default every job would take the whole node's memory and jobs would run one at a time
DefMemPerCPU=2000
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
JobCompType=jobcomp/none
InactiveLimit=0
KillWait=30
MinJobAge=300
Waittime=0
NodeName=$NODE CPUs=$(nproc) RealMemory=$(node_memory_mb) State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
}

slurmdbd_conf() {
    cat <<EOF
# Written by workflow/profiles/slurm/local-cluster.sh (mode 600: it holds the database password).
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
PidFile=$RUN_DIR/slurmdbd.pid
LogFile=$LOG_DIR/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=localhost
StoragePort=3306
StorageUser=$DB_USER
StoragePass=$DB_PASSWORD
StorageLoc=$DB_NAME
EOF
}

# ---- the daemons, in start order ------------------------------------------------------------------------
start_munge() {
    if alive "$MUNGE_PID"; then log "munge: running"; return 0; fi
    if [[ ! -s /etc/munge/munge.key ]]; then
        log "munge: creating /etc/munge/munge.key"
        mungekey --create --keyfile=/etc/munge/munge.key
    fi
    chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
    install -d -o munge -g munge -m 755 /run/munge
    install -d -o munge -g munge -m 700 /var/lib/munge /var/log/munge
    log "munge: starting"
    runuser -u munge -- /usr/sbin/munged
    wait_for 20 "munged" bash -c 'munge -n | unmunge'
}

start_mariadb() {
    if alive "$MYSQL_PID"; then log "mariadb: running"; else
        install -d -o mysql -g mysql -m 755 /run/mysqld
        if [[ ! -d /var/lib/mysql/mysql ]]; then
            log "mariadb: initialising /var/lib/mysql"
            mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
        fi
        log "mariadb: starting"
        setsid /usr/sbin/mariadbd --user=mysql --datadir=/var/lib/mysql --pid-file="$MYSQL_PID" \
            --socket="$MYSQL_SOCKET" --bind-address=127.0.0.1 </dev/null >>/var/log/mysql/local-cluster.log 2>&1 &
        wait_for 60 "mariadb" mariadb-admin --socket="$MYSQL_SOCKET" ping
    fi
    mariadb --socket="$MYSQL_SOCKET" <<EOF
CREATE DATABASE IF NOT EXISTS $DB_NAME;
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASSWORD';
ALTER USER '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASSWORD';
GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'localhost';
EOF
}

start_slurm_daemon() {  # start_slurm_daemon NAME CONFIG_CHANGED
    local name=$1 changed=$2 pidfile="$RUN_DIR/$1.pid"
    if alive "$pidfile" && [[ -z $changed ]]; then log "$name: running"; return 0; fi
    alive "$pidfile" && stop_pidfile "$name" "$pidfile"
    log "$name: starting"
    "/usr/sbin/$name"
    wait_for 30 "$name" test -s "$pidfile"
}

register_accounting() {
    if ! sacctmgr -n -P show cluster format=cluster | grep -qx "$CLUSTER_NAME"; then
        sacctmgr -i add cluster "$CLUSTER_NAME" >/dev/null
    fi
    if ! sacctmgr -n -P show account format=account | grep -qx "$ACCOUNT"; then
        sacctmgr -i add account "$ACCOUNT" cluster="$CLUSTER_NAME" description="dpvae workflow" >/dev/null
    fi
    local user
    for user in root ${SUDO_USER:-}; do
        if ! sacctmgr -n -P show assoc user="$user" account="$ACCOUNT" format=user | grep -qx "$user"; then
            sacctmgr -i add user "$user" account="$ACCOUNT" defaultaccount="$ACCOUNT" >/dev/null
        fi
    done
}

node_state() { sinfo -h -n "$NODE" -o %T 2>/dev/null | head -1; }
node_ready() { [[ $(node_state) =~ ^(idle|mixed|allocated|completing) ]]; }

up() {
    require_root
    install_packages
    install -d -m 755 "$CONF_DIR" "$RUN_DIR" "$STATE_DIR/slurmctld" "$STATE_DIR/slurmd" "$LOG_DIR" /var/log/mysql
    chown mysql:mysql /var/log/mysql
    local slurm_changed dbd_changed
    slurm_changed=$(slurm_conf | write_if_changed "$CONF_DIR/slurm.conf" 644)
    dbd_changed=$(slurmdbd_conf | write_if_changed "$CONF_DIR/slurmdbd.conf" 600)
    start_munge
    start_mariadb
    start_slurm_daemon slurmdbd "$dbd_changed"
    wait_for 60 "slurmdbd (sacctmgr)" sacctmgr -n show cluster
    register_accounting
    start_slurm_daemon slurmctld "$slurm_changed"
    start_slurm_daemon slurmd "$slurm_changed"
    if ! poll 30 node_ready; then  # e.g. DOWN after an unclean stop: return it to service
        log "node $NODE is $(node_state); resuming it"
        scontrol update nodename="$NODE" state=resume 2>/dev/null || true
        wait_for 30 "node $NODE (state $(node_state))" node_ready
    fi
    log "up: cluster $CLUSTER_NAME, partition $PARTITION, node $NODE ($(node_state)), account $ACCOUNT"
}

status() {
    local ok=0
    for entry in "munged:$MUNGE_PID" "mariadbd:$MYSQL_PID" "slurmdbd:$RUN_DIR/slurmdbd.pid" \
        "slurmctld:$RUN_DIR/slurmctld.pid" "slurmd:$RUN_DIR/slurmd.pid"; do
        if alive "${entry#*:}"; then echo "${entry%%:*}: running (pid $(cat "${entry#*:}"))"
        else echo "${entry%%:*}: not running"; ok=1; fi
    done
    if [[ $ok -eq 0 ]]; then
        sinfo
        sacctmgr -n -P show cluster format=cluster,controlhost | sed 's/^/accounting cluster: /'
    fi
    return $ok
}

check() {
    local job state=""
    job=$(sbatch --parsable --wait --output=/dev/null --wrap hostname)
    for ((i = 0; i < 60; i++)); do
        state=$(sacct -n -X -P -j "$job" -o State | head -1)
        [[ $state == COMPLETED ]] && break
        sleep 1
    done
    sacct -X -j "$job" -o JobID,JobName,Partition,Account,State,ExitCode,Elapsed
    [[ $state == COMPLETED ]] || die "job $job: sacct says '$state', not COMPLETED"
}

down() {
    require_root
    stop_pidfile slurmd "$RUN_DIR/slurmd.pid"
    stop_pidfile slurmctld "$RUN_DIR/slurmctld.pid"
    stop_pidfile slurmdbd "$RUN_DIR/slurmdbd.pid"
    stop_pidfile mariadb "$MYSQL_PID"
    stop_pidfile munge "$MUNGE_PID"
}

case ${1:-up} in
    up) up ;;
    status) status ;;
    check) check ;;
    down) down ;;
    *) die "usage: $0 [up|status|check|down]" ;;
esac
