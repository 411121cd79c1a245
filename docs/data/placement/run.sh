#!/bin/bash
# The placement study of docs/performance.md ("Placements"): for every op and
# dtype at 64K elements, one thread, the stack offset 0..112 in steps of 16
# and the offset of out and of x within the page in steps of 128; at 16M the
# same for three ops, coarser. Run from the repository root on a quiet machine
# after building actgrad-placement-probe (about 4 minutes); it rewrites the
# *.txt files beside it.
set -euo pipefail
P=$(realpath "${P:-build/bench/actgrad-placement-probe}")
cd "$(dirname "$0")"
for dt in f32 bf16 f16; do
  for op in gelu_bwd selu_bwd hardswish_bwd softshrink_bwd logit_grad; do
    $P --op $op --dtype $dt --n 65536 --vary stack --step 16 --span 128 --reps 5 --min-ms 5 > stack-$op-$dt-64k.txt 2>&1
    $P --op $op --dtype $dt --n 65536 --vary out --step 128 --reps 5 --min-ms 5 > out-$op-$dt-64k.txt 2>&1
    $P --op $op --dtype $dt --n 65536 --vary x --step 128 --reps 5 --min-ms 5 > x-$op-$dt-64k.txt 2>&1
  done
done
for op in gelu_bwd softshrink_bwd selu_bwd; do
  $P --op $op --dtype f32 --n 16777216 --vary out --step 512 --reps 3 --min-ms 30 > out-$op-f32-16m.txt 2>&1
  $P --op $op --dtype f32 --n 16777216 --vary stack --step 16 --span 64 --reps 3 --min-ms 30 > stack-$op-f32-16m.txt 2>&1
done
