#!/bin/bash
# The eleventh GPU session's plan (one H200 host, 16 CPU cores), issue 15: a lift from a weak BC, with the
# exploration noise the eighth session's probe said the rollouts tolerate (benchmarks/README.md).
# A: the banana prompt's pool (40 scenes, seed 0) and held-out scenes (20, seed 1) as before, now seen by the steeper
#    front camera of issue 13; 50 demonstrations under the default DR; BC on 25 and on 50 of them (3,000 steps each,
#    trained at once), each scored on 40 pool and 20 held-out episodes -> $OUT/bc_dr_s11.json.
# B, C: benchmarks/ppoflow_lift.py from the weaker of the two BC runs that still succeeds on the pool (BC_RUN, set
#    by hand from A's scores: bc_25 or bc_50), PPOFlow K=1 with the settings in $PPO -> $OUT/ppoflow_lift_s11.json.
# Calls back to back on one warm machine, each under 10 minutes:
#     bash benchmarks/gpu_session11.sh A; BC_RUN=bc_25 bash benchmarks/gpu_session11.sh B; ... C
# Run on 2026-12-03 at b92d611: A, then B and C with BC_RUN=bc_50 PPO_MIN=11.5; C ended without scores (the
# ppoflow_lift.py bug fixed since), and a fourth call scored them: the lift11 line with --budget 330 --ppo-minutes 10.
PH=$1
BC_OUT=bc_dr_s11.json; LIFT_OUT=ppoflow_lift_s11.json; . benchmarks/gpu_common.sh
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
PPO=${PPO:-"--decisions-per-env 96 --minibatch-size 128 --critic-warmup-iters 3 --sigma-min 0.2 --sigma-max 0.4 \
--lr-noise 1e-4 --clip-eps 0.2 --adaptive-lr --target-kl 0.05 --lr-actor 1e-5 --critic-privileged --grad-diag \
--freeze-encoder"}
weak() { timeout 600 python3 benchmarks/bc_scaling.py --work $W/bcs --device cuda --budget 555 --prompts "$P" \
  --episodes 25 50 --parallel-train --pool-scenes 40 --held-scenes 20 --steps 3000 --image-size 64 --workers 14 \
  --randomize --eval-episodes 40 --held-episodes 20 --out $OUT/$BC_OUT >> $G/bc.log 2>&1
  cp $W/bcs/state.json $OUT/bcs_state.json 2>/dev/null; }
lift11() {  # $1 budget, $2 PPOFlow minutes in all
  timeout $(( $1 + 45 )) python3 benchmarks/ppoflow_lift.py --work $W/lift --device cuda --budget $1 \
    --prompts "$P" --init-bc $B/${BC_RUN:?set BC_RUN to bc_25 or bc_50} --train-pack $B/pool --held-pack $B/held \
    --ks 1 --ppo-minutes $2 --num-envs 14 --workers 14 --eval-episodes 40 --eval-dr --no-numerics --bc-ks 10 \
    --ppo-args "$PPO" --out $OUT/$LIFT_OUT >> $G/lift.log 2>&1
  cp $W/lift/state.json $OUT/lift_state.json 2>/dev/null
  tail -n 200 $W/lift/put_the_banana_in_the_bowl/ppo_k1/metrics.jsonl > $OUT/metrics_tail.jsonl 2>/dev/null; }
case $PH in
A) weak ;;
B) lift11 555 ${PPO_MIN:-15} ;;
C) lift11 555 ${PPO_MIN:-15} ;;
*) echo "usage: bash $0 A|B|C" >&2; exit 2 ;;
esac
collect_logs
