#!/usr/bin/env bash
# A real single-node Slurm for the tests of docs/PREPARE-CLUSTER.md (issue #48): Debian's
# munge, slurmctld and slurmd, started on this machine with a configuration of their own in
# <dir> (no system file is edited; clients find it through SLURM_CONF=<dir>/slurm.conf).
#
#   scripts/slurm-local.sh start <dir>   start (or find running) munged, slurmctld and slurmd;
#                                        prints SLURM_CONF=<dir>/slurm.conf on success
#   scripts/slurm-local.sh stop <dir>    stop the daemons started with <dir>
#
# The node says it has 32 CPUs and 128 GiB (SlurmdParameters=config_overrides), so the page's
# scripts, which ask 16 CPUs and 64 GiB per shard as a real cluster's would, run verbatim on a
# 2-core machine: two shards at a time. Processes are tracked without cgroups
# (proctrack/linuxproc, task/none), which a container offers no control of. Exits non-zero with
# one line saying why when a daemon cannot start; the caller (the test) reports that line.
set -euo pipefail
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop <dir>" >&2; exit 2; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
conf="$dir/slurm.conf"

stop() {
  local pids=()
  for p in slurmd slurmctld; do
    if [ -f "$dir/$p.pid" ]; then
      pid=$(cat "$dir/$p.pid")
      kill "$pid" 2>/dev/null && pids+=("$pid")
    fi
  done
  # wait (bounded) until they have exited: a daemon still saving its state would write into a
  # folder the caller is about to remove
  for _ in $(seq 100); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && return 0
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
}

if [ "$cmd" = stop ]; then stop; exit 0; fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop <dir>" >&2; exit 2; }

for b in munged slurmctld slurmd sbatch scontrol; do
  command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] || { echo "slurm-local: $b is not installed (Debian: slurmctld slurmd slurm-client munge)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "slurm-local: slurmd must run as root (uid $(id -u))" >&2; exit 1; }

# munge: the system daemon on its default socket, which Slurm's auth/munge uses
if ! munge -n </dev/null >/dev/null 2>&1; then
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge
  chmod 0755 /run/munge
  [ -s /etc/munge/munge.key ] || { /usr/sbin/mungekey --create --force >/dev/null 2>&1 || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null; chown munge:munge /etc/munge/munge.key; chmod 0400 /etc/munge/munge.key; }
  runuser -u munge -- /usr/sbin/munged 2>"$dir/munged.err" || { echo "slurm-local: munged did not start: $(head -c 300 "$dir/munged.err")" >&2; exit 1; }
  for _ in $(seq 50); do munge -n </dev/null >/dev/null 2>&1 && break; sleep 0.1; done
  munge -n </dev/null >/dev/null 2>&1 || { echo "slurm-local: munged started but does not answer" >&2; exit 1; }
fi

host=$(hostname -s)
mkdir -p "$dir/state" "$dir/spool"
cat >"$conf" <<EOF
ClusterName=wstest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=${SLURMCTLD_PORT:-16817}
SlurmdPort=${SLURMD_PORT:-16818}
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SlurmdParameters=config_overrides
ReturnToService=2
JobRequeue=1
KillWait=2
DefMemPerCPU=1024
MinJobAge=600
MpiDefault=none
NodeName=$host NodeAddr=127.0.0.1 CPUs=32 RealMemory=131072 State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$conf"

alive() { [ -f "$dir/$1.pid" ] && kill -0 "$(cat "$dir/$1.pid")" 2>/dev/null; }
alive slurmctld || /usr/sbin/slurmctld -f "$conf" -c || { echo "slurm-local: slurmctld did not start: $(tail -n 3 "$dir/slurmctld.log" 2>/dev/null | tr '\n' ' ')" >&2; exit 1; }
alive slurmd || /usr/sbin/slurmd -f "$conf" || { echo "slurm-local: slurmd did not start: $(tail -n 3 "$dir/slurmd.log" 2>/dev/null | tr '\n' ' ')" >&2; exit 1; }
# ready when the node is idle (or mixed/allocated by an earlier run)
for _ in $(seq 150); do
  state=$(sinfo -h -N -o '%t' 2>/dev/null | head -n 1 || true)
  case "$state" in idle|mix|alloc) echo "SLURM_CONF=$conf"; exit 0 ;; esac
  sleep 0.2
done
echo "slurm-local: the node did not come up (state '${state:-none}'): $(tail -n 3 "$dir/slurmd.log" 2>/dev/null | tr '\n' ' ')" >&2
exit 1
