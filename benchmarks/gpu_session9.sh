#!/bin/bash
# The ninth GPU session's seed-task phases (one H200 host, 16 CPU cores; D ran, then its command with --tasks
# flip_mugs,bottles_in_bin: see benchmarks/README.md): the scripted expert on
# the three seed-task families at 50 scenes per task and tier (issue 19; the 2-core dev machine measured 12):
# D: benchmarks/seed_tasks.py --n 50 --tiers 1-5 --workers 15: the packs' generations and then their episodes share 15
#    busy processes; each episode's row is appended to $W/seed/panda/TASK/tier-K.rows.jsonl as it ends, so the kill
#    at the call's end loses only the episodes in flight -> $OUT/seed_tasks_n50.json (the cells finished so far).
# E: the same command, resumed from $W/seed (packs, generation records and rows stay on the warm machine)
#    -> $OUT/seed_tasks_n50.json with every cell (those of D recomputed from their rows); a cell still missing: E again.
# F: the two-arm rows the same way (--robot bimanual_panda --tiers 1-3, as seed_tasks_bimanual.json was run)
#    -> $OUT/seed_tasks_bimanual_n50.json (resumes too: F again if a cell is missing).
# Calls back to back on one warm machine, each under 10 minutes:
#     bash benchmarks/gpu_session9.sh D; bash benchmarks/gpu_session9.sh E; bash benchmarks/gpu_session9.sh F
PH=$1  # SEED_T: seconds a call may run (560)
S0=$(date +%s)  # the call's start: the wheel install below counts against the 560 s
. benchmarks/gpu_common.sh
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
seed() {  # $1 robot, $2 tiers, $3 results file
  timeout $(( ${SEED_T:-560} - ($(date +%s) - S0) )) python3 benchmarks/seed_tasks.py --robot $1 --n 50 --tiers $2 \
    --workers 15 --work $W/seed --out $OUT/$3 >> $G/seed.log 2>&1
  # the episode rows so far (a cell unfinished at the kill is rebuilt from them)
  (cd $W/seed && tar czf $OUT/seed_rows.tgz $(find . -name '*.rows.jsonl' -o -name '*.gen.json')); }
case $PH in
D|E) seed panda 1-5 seed_tasks_n50.json ;;
F) seed bimanual_panda 1-3 seed_tasks_bimanual_n50.json ;;
*) echo "usage: bash $0 D|E|F" >&2; exit 2 ;;
esac
collect_logs
