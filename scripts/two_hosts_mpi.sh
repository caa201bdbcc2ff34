#!/usr/bin/env bash
# Data-parallel training across two hosts, on one machine: two network
# namespaces ("hosts" A and B, 10.77.0.1 and 10.77.0.2) joined by a veth
# pair, each with a hostname of its own (a UTS namespace). mpirun runs on A
# and starts its daemon on each host through an rsh agent that enters that
# host's namespaces (what ssh would do on a cluster); the ranks talk over
# TCP only (btl tcp,self: no shared memory between the "hosts").
#
#   bash scripts/two_hosts_mpi.sh        (as root: namespaces need CAP_NET_ADMIN)
#
# 1. LeNet on MNIST, 2 ranks on one host (plain mpirun), then 2 ranks on the
#    two hosts, 200 iterations each: the final weights must be the same
#    bytes (the same data split, seeds and reduction order; only the
#    transport differs), and so the same test accuracy.
# 2. Host B killed mid-run (every process in its namespace, SIGKILL, as a
#    machine that dies): the job must end within 60 s, non-zero, with
#    Open MPI's message (which one depends on who notices first: "ORTE has
#    lost communication with a remote daemon"; "An MPI communication peer
#    process has unexpectedly disconnected" naming the peer host; or, when
#    the launch channel to B (the rsh agent here, ssh on a cluster) ends
#    first, "ORTE was unable to reliably start one or more daemons", which
#    Open MPI prints for any daemon whose channel dies, started or not).
#
# Exit status: 0 when both hold, 1 when one does not, 77 where this machine
# cannot make network namespaces (ctest reports a skip, with the reason).
# Needs examples/mnist/*_lmdb (data/mnist/get_mnist.sh) and a build
# (DLCAFFE_BUILD_DIR, default build/).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${DLCAFFE_BUILD_DIR:-$root/build}"
dlcaffe="$build/tools/dlcaffe"
[ -x "$dlcaffe" ] || { echo "two_hosts_mpi: no $dlcaffe: build first (scripts/build.sh)" >&2; exit 1; }
[ -d examples/mnist/mnist_train_lmdb ] ||
  { echo "two_hosts_mpi: no examples/mnist/mnist_train_lmdb: run data/mnist/get_mnist.sh" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "two_hosts_mpi: no mpirun: run scripts/install_deps.sh" >&2; exit 1; }

# Names of this run's own (two runs at once do not meet).
ns_a="dlc-a-$$" ns_b="dlc-b-$$"
veth_a="dlca$$" veth_b="dlcb$$"
addr_a=10.77.0.1 addr_b=10.77.0.2
work="$(mktemp -d)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

cleanup() {
  for ns in "$ns_a" "$ns_b"; do
    if ip netns list 2>/dev/null | grep -qw "$ns"; then
      ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
      ip netns del "$ns" 2>/dev/null || true
    fi
  done
  rm -rf "$work"
}
trap cleanup EXIT

if ! command -v ip >/dev/null || ! ip netns add "$ns_a" 2>"$work/netns.err"; then
  echo "two_hosts_mpi: SKIP: cannot make a network namespace here ($(cat "$work/netns.err" 2>/dev/null || echo 'no ip command: install iproute2'));" \
       "run it as root on a machine that allows CAP_NET_ADMIN"
  exit 77
fi
ip netns add "$ns_b"
ip link add "$veth_a" type veth peer name "$veth_b"
ip link set "$veth_a" netns "$ns_a"
ip link set "$veth_b" netns "$ns_b"
ip -n "$ns_a" addr add "$addr_a/24" dev "$veth_a"
ip -n "$ns_b" addr add "$addr_b/24" dev "$veth_b"
for pair in "$ns_a:$veth_a" "$ns_b:$veth_b"; do
  ip -n "${pair%%:*}" link set lo up
  ip -n "${pair%%:*}" link set "${pair##*:}" up
done

# The rsh agent: "AGENT HOST COMMAND..." runs COMMAND on HOST, as ssh does.
cat > "$work/agent.sh" <<EOF
#!/bin/sh
host=\$1; shift
case "\$host" in
  $addr_a) ns=$ns_a ;;
  $addr_b) ns=$ns_b ;;
  *) echo "two_hosts_mpi agent: unknown host \$host" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$ns; \$*"
EOF
chmod +x "$work/agent.sh"

# LeNet's solver with a short run, its snapshots into `$1`.
solver() {
  mkdir -p "$1"
  cat > "$1/solver.prototxt" <<EOF
net: "models/lenet/lenet_train_test.prototxt"
test_iter: 100
test_interval: $2
test_initialization: false
base_lr: 0.01
momentum: 0.9
weight_decay: 0.0005
lr_policy: "inv"
gamma: 0.0001
power: 0.75
display: 50
max_iter: $2
snapshot_prefix: "$1/lenet"
random_seed: 1701
type: "SGD"
EOF
  echo "$1/solver.prototxt"
}

two_hosts_mpirun() {
  ip netns exec "$ns_a" unshare --uts sh -c "hostname $ns_a; exec \"\$@\"" sh \
    mpirun --host "$addr_a:1,$addr_b:1" -np 2 --mca plm_rsh_agent "$work/agent.sh" \
    --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 \
    "$@"
}

final_accuracy() { grep -E "Test net output #[0-9]+: accuracy" "$1" | tail -n 1 | sed 's/.*accuracy = //'; }

status=0
iterations=200

echo "two_hosts_mpi: 1. LeNet, $iterations iterations, 2 ranks on one host"
one="$(solver "$work/one_host" $iterations)"
mpirun --oversubscribe -np 2 "$dlcaffe" train --solver="$one" > "$work/one_host.log" 2>&1 ||
  { echo "two_hosts_mpi: FAIL: the one-host run failed:"; tail -n 20 "$work/one_host.log"; exit 1; }
echo "two_hosts_mpi:    2 ranks on two hosts ($ns_a, $ns_b) over TCP"
two="$(solver "$work/two_hosts" $iterations)"
two_hosts_mpirun "$dlcaffe" train --solver="$two" > "$work/two_hosts.log" 2>&1 ||
  { echo "two_hosts_mpi: FAIL: the two-host run failed:"; tail -n 20 "$work/two_hosts.log"; exit 1; }
# The root names each rank's host: one rank on each.
grep -q "rank 0 on $ns_a, rank 1 on $ns_b)" "$work/two_hosts.log" ||
  { echo "two_hosts_mpi: FAIL: not one rank on each host:"; grep "Data-parallel" "$work/two_hosts.log"; status=1; }
w_one="$work/one_host/lenet_iter_$iterations.caffemodel"
w_two="$work/two_hosts/lenet_iter_$iterations.caffemodel"
if [ -f "$w_one" ] && [ -f "$w_two" ] && cmp -s "$w_one" "$w_two"; then
  echo "two_hosts_mpi:    the same weights, byte for byte; test accuracy $(final_accuracy "$work/one_host.log") (one host), $(final_accuracy "$work/two_hosts.log") (two hosts)"
else
  echo "two_hosts_mpi: FAIL: the two runs' final weights differ (or one is missing): $w_one $w_two"
  status=1
fi

echo "two_hosts_mpi: 2. host $ns_b killed mid-run"
long="$(solver "$work/killed" 100000)"
two_hosts_mpirun "$dlcaffe" train --solver="$long" > "$work/killed.log" 2>&1 &
job=$!
for _ in $(seq 1 120); do  # until training runs (a logged iteration past 0)
  grep -qE "Iteration [1-9][0-9]* " "$work/killed.log" && break
  sleep 0.5
done
killed_at=$SECONDS
victims="$(ip netns pids "$ns_b" | tr '\n' ' ')"
[ -n "$victims" ] || { echo "two_hosts_mpi: FAIL: no process runs on host $ns_b"; exit 1; }
kill -9 $victims 2>/dev/null || true  # some may end on their own meanwhile
ended=""
for _ in $(seq 1 120); do
  kill -0 "$job" 2>/dev/null || { ended=yes; break; }
  sleep 0.5
done
if [ -z "$ended" ]; then
  echo "two_hosts_mpi: FAIL: the job went on 60 s after host $ns_b was killed:"
  tail -n 20 "$work/killed.log"
  kill -9 "$job" 2>/dev/null || true
  exit 1
fi
set +e
wait "$job"
code=$?
set -e
message="$({ grep -E "lost communication with a remote daemon|unexpectedly disconnected|Peer host:|killed by signal|exited on signal|unable to reliably start one or more daemons" "$work/killed.log" || true; } | awk 'NR <= 3')"
echo "two_hosts_mpi:    the job ended $((SECONDS - killed_at)) s after the kill (pids $victims), exit code $code:"
echo "$message" | sed 's/^/      /'
if [ "$code" -eq 0 ] || [ -z "$message" ]; then
  echo "two_hosts_mpi: FAIL: a job that lost a host must end non-zero with a message:"
  tail -n 30 "$work/killed.log"
  status=1
fi
[ "$status" -eq 0 ] && echo "two_hosts_mpi: PASS"
exit "$status"
