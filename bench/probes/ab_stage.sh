#!/bin/bash
# A/B of the staging kernel's shape in one call on the GPU machine: the
# default (1024 threads x 4 chunks a block) against 256 x 1,
# built side by side (build-old via -Dcuda_args), through the tests that
# stage data, `cgr-bench serve --quick` twice each, `staging` and `chain`.
#   OUT=/tmp/ab bash bench/probes/ab_stage.sh
set -u
[ -d build-gpu ] || meson setup build-gpu >/dev/null
[ -d build-old ] || meson setup build-old -Dcuda_args="-DCGR_STAGE_THREADS=256 -DCGR_STAGE_UNROLL=1" >/dev/null
ninja -C build-gpu >$OUT/b1.log 2>&1 || tail -20 $OUT/b1.log
ninja -C build-old >$OUT/b2.log 2>&1 || tail -20 $OUT/b2.log
meson test -C build-gpu arm shapes staging equivalence --print-errorlogs 2>&1 | grep -E "^ *[0-9]+/|stderr" | head
for r in 1 2; do for b in build-gpu build-old; do
  echo "=== $b run $r"
  $b/bench/cgr-bench serve --quick > $OUT/s-$b-$r.log 2>&1
  grep -A9 "armed (CGR_ACQUIRE_ARM" $OUT/s-$b-$r.log | tail -7
  grep -A8 "p50/busy-u plain" $OUT/s-$b-$r.log | tail -7 | awk '{print "  busy", $0}'
  sed -n '/  summary, on/,/figures measured/p' $OUT/s-$b-$r.log
done; done
for b in build-gpu build-old; do echo "=== $b staging+chain"; $b/bench/cgr-bench staging --quick > $OUT/st-$b.log 2>&1; grep -E "KiB|MiB" $OUT/st-$b.log | head -12; $b/bench/cgr-bench chain --quick > $OUT/ch-$b.log 2>&1; grep -E "I/O|cgr/raw" $OUT/ch-$b.log; done
cd $OUT && tar czf all.tgz *.log && rm -f *.log
