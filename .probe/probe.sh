#!/bin/bash
# temporary measurement, not part of the repo
set -u
meson setup build-probe >/dev/null 2>&1 || { echo setup failed; exit 1; }
ninja -C build-probe bench/cgr-bench >/dev/null 2>&1 || { echo build failed; ninja -C build-probe 2>&1 | tail -20; exit 1; }
B=build-probe/bench/cgr-bench
for r in 1 2 3; do
  for cfg in base PROBE_EVENT PROBE_NOEV; do
    if [ $cfg = base ]; then env=""; else env="$cfg=1"; fi
    env $env $B chain --steps 1000 --warmup 50 --json $OUT/chain-$cfg-$r.json > $OUT/chain-$cfg-$r.txt 2>&1
    echo "== $cfg round $r"; grep -A12 -i "per kernel" $OUT/chain-$cfg-$r.txt | head -14
  done
done
