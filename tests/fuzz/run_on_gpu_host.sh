#!/usr/bin/env bash
# On a GPU host (../shared/gpu/README.md), after
#   ../shared/gpu/bundle.sh .gpu/fuzz.tar.xz build-fuzz/fuzz/fuzz_*
# (scripts/fuzz.sh builds them) and a copy of this file in .gpu/:
# every fuzz target at once, each with JOBS libFuzzer
# processes (-fork), for SECONDS; findings, logs and the grown corpora go
# to $OUT. Usage: [TARGETS="caffemodel lmdb"] bash .gpu/fuzz_run.sh SECONDS JOBS
set -uo pipefail
seconds=$1; jobs=$2
tar -C /tmp -xJf .gpu/fuzz.tar.xz && source /tmp/gpu/env.sh
root=$PWD
export ASAN_OPTIONS="protect_shadow_gap=0:detect_leaks=1:allocator_may_return_null=1"
export OPENCV_IO_MAX_IMAGE_PIXELS=16777216  # as scripts/fuzz.sh
export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$root/tests/sanitizers/ubsan.supp"
nproc; nvidia-smi -L 2>/dev/null | head -2
# The corpora of an earlier run, if carried along (.gpu/corpus_seed.tar.xz).
[ -f .gpu/corpus_seed.tar.xz ] && tar -C /tmp -xJf .gpu/corpus_seed.tar.xz
# A start-up check before the long run: every target started STARTS times
# (default 1), 16 at once, on the empty input. A crash at start names no
# input, so each failing start keeps its whole report in $OUT/startup/.
mkdir -p /tmp/startup "$OUT/startup"
: > /tmp/startup/empty
for bin in /tmp/gpu/bin/fuzz_*; do
  for i in $(seq "${STARTS:-1}"); do
    while [ "$(jobs -rp | wc -l)" -ge 16 ]; do sleep 0.2; done
    ( log="/tmp/startup/${bin##*/}.$i.log"
      (cd /tmp/startup && "$bin" /tmp/startup/empty > "$log" 2>&1) || mv "$log" "$OUT/startup/" ) &
  done
done
wait
echo "start-up check: $(ls "$OUT/startup" | wc -l) of $(( 6 * ${STARTS:-1} )) starts failed"
ls "$OUT/startup" | head
# CPU time is measured per target: bash's `time` counts the libFuzzer
# processes that the -fork parent waits for.
TIMEFORMAT='%R s wall, %U s user, %S s system'
for bin in /tmp/gpu/bin/fuzz_*; do
  t=${bin##*/fuzz_}
  [ -z "${TARGETS:-}" ] || [[ " $TARGETS " == *" $t "* ]] || continue
  mkdir -p "$OUT/findings/$t" "/tmp/corpus/$t" "/tmp/run/$t"
  ( { time (cd "/tmp/run/$t" && "$bin" -fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
     -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -malloc_limit_mb=2048 \
     -max_len=65536 -artifact_prefix="$OUT/findings/$t/" -print_final_stats=1 \
     "/tmp/corpus/$t" "$root/tests/fuzz/corpus/$t" > "$OUT/fuzz_$t.log" 2>&1) ; } 2> "/tmp/run/$t.time" ) &
done
wait
for t in /tmp/corpus/*; do
  t=${t##*/}
  [ -f "/tmp/run/$t.time" ] || continue
  echo "$t: $(cat "/tmp/run/$t.time"); $(ls "/tmp/corpus/$t" | wc -l) corpus files; $(grep -E '^#[0-9]+' "$OUT/fuzz_$t.log" | tail -1)"
done
tar -C /tmp -cJf "$OUT/corpus.tar.xz" corpus
# Findings in one file (there may be too many to come back one by one);
# slow units are reports, not failures.
find "$OUT/findings" -name 'slow-unit-*' -delete
tar -C "$OUT" -cJf "$OUT/findings.tar.xz" findings && rm -rf "$OUT/findings"
tar -tJf "$OUT/findings.tar.xz" | grep -c -v '/$' 
