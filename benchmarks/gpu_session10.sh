#!/bin/bash
# The tenth GPU session's plan (one H200 host, 16 CPU cores), after the ninth's (benchmarks/README.md). S ran (twice,
# 2026-12-03, at a6d6dac: seed_tasks_sort_n50.json), then F, B and T at cfe2575 (seed_tasks_flip_n50.json,
# seed_tasks_bottles_n50.json, seed_tasks_sort13_n50.json); P was not run (the machine could not be started for 40 minutes):
# S: issue 19's sort cells at 50 scenes per tier, which the ninth session's device time did not finish (145 of 250
#    episodes; sort episodes take 36-90 s on these cores): benchmarks/seed_tasks.py --tasks sort_from_tote --n 50
#    --workers 15 -> $OUT/seed_tasks_sort_n50.json and the rows ($OUT/seed_rows.tgz). About 20 minutes of episodes
#    and generation: call S again (it resumes from the rows on the warm machine) until every cell is recorded.
# P: issue 15's noise-scale probe at larger noise: the banana prompt's pool and BC (as gpu_session8.sh A; 520 s, BC
#    resumes if cut), then benchmarks/ppoflow_noise_scale.py at sigma 0.6 and 1.0 -> $OUT/ppoflow_noise_scale_s10.json.
#    (The eighth session found no signal in ~135 episodes at sigma 0.075 or 0.3: noise scale > 1,723 and > 294.)
# B, T: the bottles' cells (all tiers) and the sort's tiers 1-3 at 50 scenes, the same way.
# F: issue 19's mug cells at 50 scenes per tier again, after the flip planner's changes: seed_tasks.py --tasks flip_mugs
#    --n 50 --workers 15 -> $OUT/seed_tasks_flip_n50.json (resumes like S; SEED_T as for S).
# Calls back to back on one warm machine, each under 10 minutes (SEED_T: seconds an S call may run, 560):
#     bash benchmarks/gpu_session10.sh S; bash benchmarks/gpu_session10.sh S; bash benchmarks/gpu_session10.sh P
PH=$1
S0=$(date +%s)
BC_OUT=bc_dr100_s10.json; . benchmarks/gpu_common.sh
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
case $PH in
S) timeout $(( ${SEED_T:-560} - ($(date +%s) - S0) )) python3 benchmarks/seed_tasks.py --robot panda --n 50 \
     --tiers 1-5 --tasks sort_from_tote --workers 15 --work $W/seed --out $OUT/seed_tasks_sort_n50.json >> $G/seed.log 2>&1
   (cd $W/seed && tar czf $OUT/seed_rows.tgz $(find . -name '*.rows.jsonl' -o -name '*.gen.json')) ;;
F) timeout $(( ${SEED_T:-560} - ($(date +%s) - S0) )) python3 benchmarks/seed_tasks.py --robot panda --n 50 \
     --tiers ${SEED_TIERS:-1-5} --tasks flip_mugs --workers 15 --work $W/seedf --out $OUT/seed_tasks_flip_n50.json >> $G/seed.log 2>&1
   (cd $W/seedf && tar czf $OUT/seed_rows_flip.tgz $(find . -name '*.rows.jsonl' -o -name '*.gen.json')) ;;
B) timeout 390 python3 benchmarks/seed_tasks.py --robot panda --n 50 --tiers 1-5 --tasks bottles_in_bin --workers 15 \
     --work $W/seedb --out $OUT/seed_tasks_bottles_n50.json >> $G/bottles.log 2>&1 ;;
T) timeout 265 python3 benchmarks/seed_tasks.py --robot panda --n 50 --tiers 1-3 --tasks sort_from_tote --workers 15 \
     --work $W/seeds --out $OUT/seed_tasks_sort13_n50.json >> $G/sort.log 2>&1 ;;
P) bcs 520; done_bc && timeout $(( $(left 570) + 30 )) python3 benchmarks/ppoflow_noise_scale.py --init $B/bc_100 \
     --pack $B/pool --work $W/probe --device cuda --sigmas 0.6,1.0 --num-envs 14 --decisions-per-env 64 --warmup 3 \
     --measure 4 --budget $(left 570) --out $OUT/ppoflow_noise_scale_s10.json >> $G/probe.log 2>&1 ;;
*) echo "usage: bash $0 S|F|B|T|P" >&2; exit 2 ;;
esac
collect_logs
