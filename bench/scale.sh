#!/usr/bin/env bash
# Data-parallel training throughput: each net trained by `dlcaffe train` with
# one replica, then with REPLICAS replicas in each of MODES, all in this one
# command:
#   threads  one process, one replica per entry of DEVICES (--device=a,b,...)
#   mpi      $MPIRUN -np REPLICAS, one replica per process (each rank takes
#            the GPU of its local rank, or the default device without GPUs)
# and, to find where a step's time goes (docs/data-parallel.md, "Where the
# time goes"), threads-mode variants that do not train correctly:
#   threads/none    --exchange_diagnosis=none: nothing exchanged
#   threads/copies  --exchange_diagnosis=copies: copies to the host and back
#   threads/sum1    the exchange with one summing thread (--exchange_threads=1)
#   threads/flat    the exchange with equal buckets (--bucket_taper=false)
# With TRACE=1 every several-replica run writes --exchange_trace into the
# logs, and its sum (bench/exchange_trace.py) follows the run's progress line.
# Every replica trains BATCH images per step (the effective batch is
# REPLICAS x BATCH), SGD with momentum, on the Input layer's constant data
# (zeros; a DummyData layer with a gaussian filler also trains, but draws
# its data on the host at every step, which would be timed too).
# The solver displays every INTERVAL iterations; the first WARMUP iterations'
# intervals are discarded, the next ITERS iterations' are timed (both rounded
# up to whole intervals). Reported per run:
#   images/s   all replicas' images over the timed intervals' time: what the
#              root's "Speed:" lines give, with the interval times of its
#              display lines (six digits) instead of Speed's one decimal
#   scaling    images/s with REPLICAS replicas / images/s with one, same command
#   exposed    gradient exchange not hidden behind backward, ms per step and
#              % of the step (from the root's "Gradient exchange:" lines)
#
#   NETS="resnet50 vgg16" BATCH=16 REPLICAS=2 ITERS=20 WARMUP=5 bash bench/scale.sh
#   DLCAFFE=/tmp/gpu/bin/dlcaffe MODES=threads bash bench/scale.sh   # GPU-host bundle
#
# DEVICES (thread mode; default: the first REPLICAS GPUs of `dlcaffe
# device_query` when there are that many, otherwise the default device
# repeated, which the output says) is also where the one-replica run goes
# (its first entry). MPI mode is skipped, with a note, when $MPIRUN (default
# mpirun) is not found; MPIRUN_ARGS (default "--bind-to none") are passed to
# it, plus --oversubscribe when REPLICAS exceeds the cores. BUCKET_MB is
# dlcaffe's --bucket_mb (default 25). Logs are kept in LOG_DIR if set.
#
# Several replicas on one device (or one CPU) show correctness and overhead,
# not scaling: they share the same compute.
#
# With DDP_REF set to a command that prints bench/ddp_ref.py's JSON (e.g.
# "python3 bench/ddp_ref.py"; "--device cpu --threads 2" on a CPU), PyTorch
# DistributedDataParallel trains each net the same way in the same command,
# with 1 and REPLICAS ranks (NCCL: one GPU per rank, so it needs REPLICAS
# GPUs), as rows of mode torch-ddp whose scaling is against its own one-rank
# row. With fewer GPUs than REPLICAS (and no "--device cpu") it runs one
# rank only.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
dlcaffe="${DLCAFFE:-build/tools/dlcaffe}"
mpirun="${MPIRUN:-mpirun}"
mpirun_args="${MPIRUN_ARGS:---bind-to none}"
nets="${NETS:-resnet50 vgg16}"
batch="${BATCH:-16}"
replicas="${REPLICAS:-2}"
modes="${MODES:-threads mpi}"
iters="${ITERS:-20}"
warmup="${WARMUP:-5}"
interval="${INTERVAL:-5}"
bucket_mb="${BUCKET_MB:-25}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
logs="${LOG_DIR:-$work}"
mkdir -p "$logs"

warm_n=$(( (warmup + interval - 1) / interval ))  # display intervals discarded
timed_n=$(( (iters + interval - 1) / interval ))  # display intervals timed
[ "$timed_n" -ge 1 ] || { echo "ITERS must be at least 1" >&2; exit 1; }
# The display at iteration k*INTERVAL closes the k-th interval; it happens
# only below max_iter, hence the one step more.
max_iter=$(( (warm_n + timed_n) * interval + 1 ))

# Devices: flat index and type of each, from device_query.
query="$("$dlcaffe" device_query 2>&1)" || { echo "$query" >&2; exit 1; }
device_name="$(echo "$query" | grep -m1 'Name:' | sed 's/.*Name: //')"
gpus="$(echo "$query" | awk '/Device [0-9]+: ocl:/ {d = $0; sub(/.*Device /, "", d); sub(/:.*/, "", d)}
                            /Type: GPU/ {print d}')"
gpu_count=$(echo "$gpus" | grep -c . || true)
default_device="$(echo "$gpus" | head -1)"
default_device="${default_device:-0}"
if [ -n "${DEVICES:-}" ]; then
  devices="$DEVICES"
  device_note="DEVICES=$devices"
elif [ "$gpu_count" -ge "$replicas" ]; then
  devices="$(echo "$gpus" | head -"$replicas" | paste -sd,)"
  device_note="one GPU per replica: devices $devices"
else
  devices="$(for _ in $(seq "$replicas"); do echo "$default_device"; done | paste -sd,)"
  device_note="$gpu_count GPU(s) for $replicas replicas: the replicas share device $default_device (--device=$devices): overhead, not scaling"
fi
first_device="${devices%%,*}"

echo "device: $device_name ($gpu_count GPU(s) listed); batch $batch per replica; $replicas replicas"
echo "timed: $((timed_n * interval)) iterations after $((warm_n * interval)) (display every $interval); bucket_mb $bucket_mb"
echo "one replica: --device=$first_device"
case " $modes " in *" threads "*) echo "threads: $device_note";; esac
mpi_ok=0
case " $modes " in *" mpi "*)
  if command -v "$mpirun" > /dev/null 2>&1; then
    mpi_ok=1
    mpi_note="$mpirun -np $replicas $mpirun_args"
    if [ "$replicas" -gt "$(nproc)" ]; then mpi_note="$mpi_note --oversubscribe"; fi
    if [ "$gpu_count" -ge "$replicas" ]; then
      echo "mpi: $mpi_note (each rank the GPU of its local rank)"
    elif [ "$gpu_count" -ge 1 ]; then
      echo "mpi: $mpi_note ($gpu_count GPU(s) for $replicas ranks: ranks share GPUs: overhead, not scaling)"
    else
      echo "mpi: $mpi_note (no GPU: every rank on the default device, sharing it: overhead, not scaling)"
    fi
  else
    echo "mpi: skipped: '$mpirun' not found (OpenMPI is not installed here; set MPIRUN to its path)"
  fi;;
esac

if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# Runs one training (the rest of the arguments: the command line before
# dlcaffe's flags, empty for a plain run) and prints
# "images/s exposed_ms step_ms" over the timed intervals ("-" where there is
# no Gradient exchange line), or nothing when it failed.
train() {
  local log="$1" solver="$2" images_per_step="$3"; shift 3
  local start=$SECONDS
  if ! "$@" "$dlcaffe" train --solver="$solver" --bucket_mb="$bucket_mb" "${extra[@]}" > "$log" 2>&1; then
    echo "failed after $((SECONDS - start)) s: $log" >&2
    grep -i 'error\|fail\|abort' "$log" | head -5 >&2 || tail -5 "$log" >&2
    return 0
  fi
  local took=$((SECONDS - start)) out
  if [ -f "$log.trace" ]; then
    python3 "$root/bench/exchange_trace.py" --skip "$((warm_n * interval))" "$log.trace" | sed 's/^/    /' >&2
  fi
  if [ -f "$log.trace.rank0" ]; then
    python3 "$root/bench/exchange_trace.py" --skip "$((warm_n * interval))" "$log.trace.rank0" | sed 's/^/    rank 0: /' >&2
  fi
  # Each display interval: "Iteration N (R iter/s, Ls/D iters)", then (when
  # R > 0, i.e. from the second display on) the Speed line and, with several
  # replicas, the Gradient exchange line. images/s is taken from the
  # interval's time L (printed with six digits, the Speed line's images/s
  # with one decimal): images per step x timed steps / their time.
  out="$(awk -v skip="$warm_n" -v take="$timed_n" -v per_step="$images_per_step" -v d="$interval" '
    /\] Iteration [0-9]+ \([0-9.e+-]+ iter\/s, / {
      line = $0; sub(/.*\] Iteration [0-9]+ \(/, "", line); split(line, f, " ")
      if (f[1] + 0 > 0) {
        n++; ok = n > skip && n <= skip + take
        if (ok) {
          sub(/s\/.*/, "", f[3]); L = f[3] + 0; t += L; k++
          each = each sprintf(" %.4g", per_step * d / L)
        }
      } else ok = 0
    }
    /\] +Speed: / && ok { line = $0; sub(/.*Speed: /, "", line); logged += line * L }
    /\] +Gradient exchange: / && ok {
      line = $0; sub(/.*Gradient exchange: /, "", line); e += line + 0
      sub(/.*% of /, "", line); st += line + 0; g++
    }
    END {
      if (k < take || t <= 0) exit  # fewer intervals than asked: no figure
      # The Speed lines must count the same images (all replicas).
      # (Speed has one decimal: 0.05 images/s of rounding over the time t.)
      if (logged - per_step * d * k > 0.1 * per_step * d * k + 0.05 * t ||
          per_step * d * k - logged > 0.1 * per_step * d * k + 0.05 * t)
        printf "warning: the Speed lines count %.0f images, expected %d\n", logged, per_step * d * k > "/dev/stderr"
      printf "%.3f %s %s%s\n", per_step * d * k / t, g ? sprintf("%.2f", e / g) : "-",
             g ? sprintf("%.2f", st / g) : "-", each
    }' "$log")"
  # Progress on stderr: the run's wall time and each timed interval's images/s.
  if [ -z "$out" ]; then
    echo "  $(basename "$log" .log): $took s; fewer display intervals than asked in $log" >&2
    return 0
  fi
  echo "  $(basename "$log" .log): $took s; images/s per timed interval: $(echo "$out" | cut -d' ' -f4-)" >&2
  echo "$out" | cut -d' ' -f1-3
}

rows="$work/rows.txt"
: > "$rows"
for net in $nets; do
  model="$work/${net}_train.prototxt"
  if [ ! -f "models/bench/${net}_train.prototxt" ]; then
    echo "$net: no models/bench/${net}_train.prototxt" >&2
    echo "$net single 1 $batch -" >> "$rows"
    continue
  fi
  # The nets are written for batch 16: the first dim of each input shape.
  sed "s/dim: 16\b/dim: $batch/" "models/bench/${net}_train.prototxt" > "$model"
  solver="$work/${net}_solver.prototxt"
  cat > "$solver" <<EOF
net: "$model"
type: "SGD"
base_lr: 0.0001
momentum: 0.9
lr_policy: "fixed"
max_iter: $max_iter
display: $interval
snapshot: 0
snapshot_after_train: false
EOF
  echo "$net:" >&2
  extra=(--device="$first_device")
  one="$(train "$logs/${net}_1.log" "$solver" "$batch")"
  echo "$net single 1 $batch ${one:--}" >> "$rows"
  [ "$replicas" -gt 1 ] || continue
  for mode in $modes; do
    log="$logs/${net}_${mode/\//_}_$replicas.log"
    trace=()
    if [ "${TRACE:-0}" = 1 ]; then trace=(--exchange_trace="$log.trace"); fi
    case "$mode" in
      threads|threads/none|threads/copies|threads/sum1|threads/flat)
        extra=(--device="$devices" "${trace[@]}")
        case "$mode" in
          threads/none) extra+=(--exchange_diagnosis=none);;
          threads/copies) extra+=(--exchange_diagnosis=copies);;
          threads/sum1) extra+=(--exchange_threads=1);;
          threads/flat) extra+=(--bucket_taper=false);;
        esac
        res="$(train "$log" "$solver" $((batch * replicas)))";;
      mpi)
        [ "$mpi_ok" = 1 ] || continue
        extra=("${trace[@]}")
        oversub=()
        if [ "$replicas" -gt "$(nproc)" ]; then oversub=(--oversubscribe); fi
        # shellcheck disable=SC2086
        res="$(train "$log" "$solver" $((batch * replicas)) \
               "$mpirun" -np "$replicas" $mpirun_args "${oversub[@]}")";;
      *) echo "unknown mode '$mode' (threads, mpi, threads/none, threads/copies, threads/sum1, threads/flat)" >&2; continue;;
    esac
    echo "$net $mode $replicas $batch ${res:--}" >> "$rows"
  done
  if [ -n "${DDP_REF:-}" ]; then
    sizes=1
    if [ "$replicas" -gt 1 ]; then
      if [ "$gpu_count" -lt "$replicas" ] && [[ "$DDP_REF" != *"--device cpu"* ]]; then
        echo "torch-ddp: $gpu_count GPU(s) for $replicas ranks: NCCL takes one GPU per rank, so one rank only" >&2
      else
        sizes="1,$replicas"
      fi
    fi
    # shellcheck disable=SC2086
    ddp="$($DDP_REF --net "$net" --batch "$batch" --world-sizes "$sizes" \
           --iters $((timed_n * interval)) --warmup $((warm_n * interval)) \
           --bucket-mb "$bucket_mb" | tail -1)" || ddp=""
    python3 - "$net" "$batch" "$sizes" "$ddp" >> "$rows" <<'PY' || echo "$net: torch-ddp failed" >&2
import json, sys
net, batch, sizes, text = sys.argv[1:5]
results = json.loads(text)["results"] if text else {}
for n in sizes.split(","):
    r = results.get(n)
    print(net, "torch-ddp", n, batch, "%.3f" % r["images_per_s"] if r else "-", "-", "-")
PY
  fi
done

echo
echo "| net | mode | replicas | batch per replica | images/s | scaling × | exposed comm ms/step | exposed % of step |"
echo "|---|---|---|---|---|---|---|---|"
awk '
  $2 == "single" { base[$1] = $5 }
  $2 == "torch-ddp" && $3 == 1 { ddp_base[$1] = $5 }
  {
    ips = ($5 == "-") ? "-" : sprintf("%.2f", $5); scale = "-"; ms = "-"; pct = "-"
    # torch-ddp rows scale against their own one-rank row.
    b = ($2 == "torch-ddp") ? ddp_base[$1] : base[$1]
    if (ips == "-") ips = "failed"
    else if (b != "" && b != "-") scale = sprintf("%.2f", ips / b)
    if ($6 != "" && $6 != "-") { ms = $6; pct = sprintf("%.1f", 100 * $6 / $7) }
    printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, ips, scale, ms, pct
  }' "$rows"
