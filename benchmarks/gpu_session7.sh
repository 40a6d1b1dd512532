#!/bin/bash
# A later GPU session's plan (one H200, 16 CPU cores; planned, not run): the fifth session's PPOFlow run
# (benchmarks/README.md) again, with what it showed was missing -> ppoflow_lift_s7.json (issue 15):
# - the critic trains on after the policy's KL stop (--critic-after-stop, now the default: in the fifth
#   session the stop cut the critic short in 73% of updates, explained variance ~0.33);
# - 64 decisions per env and update instead of 32 (~35 episodes an update instead of ~17);
# - --grad-diag: the cosine of two half-batches' policy gradients, i.e. whether a batch's gradient is signal.
# Run from the repo root on the GPU machine after `bash ../shared/device/wheels.sh ...` built .whl/ (see
# benchmarks/README.md), as three back-to-back calls on one warm machine, each under 10 minutes:
#     bash benchmarks/gpu_session7.sh A; bash benchmarks/gpu_session7.sh B; bash benchmarks/gpu_session7.sh C
# A: the pool (40 scenes, seed 0), held-out scenes (20, seed 1), 100 demonstrations under the default DR and BC
#    on them (5000 steps), as in the fifth session; then the BC policy scored and PPOFlow started.
# B, C: PPOFlow K=1 with 14 envs, privileged and timed critic, adaptive learning rates at a whole-chain target
#    KL of 0.05, clip 0.2, 11.5 minutes; every policy scored on nominal pool and held-out scenes and under DR.
PH=$1
BC_OUT=bc_dr100_s7.json; . benchmarks/gpu_common.sh
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
PPO="--decisions-per-env 64 --minibatch-size 128 --critic-warmup-iters 3 --sigma-min 0.05 --sigma-max 0.1 \
--lr-noise 1e-4 --clip-eps 0.2 --adaptive-lr --target-kl 0.05 --lr-actor 3e-6 --critic-privileged --grad-diag"
lift() {  # $1 budget
  timeout $(( $1 + 45 )) python3 benchmarks/ppoflow_lift.py --work $W/lift --device cuda --budget $1 \
    --prompts "$P" --init-bc $B/bc_100 --train-pack $B/pool --held-pack $B/held --ks 1 --ppo-minutes 11.5 \
    --num-envs 14 --workers 14 --eval-episodes 40 --eval-dr --no-numerics --bc-ks 10 --ppo-args "$PPO" \
    --out $OUT/ppoflow_lift_s7.json >> $G/lift.log 2>&1; }
case $PH in
A) bcs 450; done_bc && lift $(left 570) ;;
B) done_bc || bcs 300; lift $(left 570) ;;
C) lift 540 ;;
*) echo "usage: bash benchmarks/gpu_session7.sh A|B|C" >&2; exit 2 ;;
esac
cp $W/bcs/state.json $OUT/bcs_state.json 2>/dev/null; cp $W/lift/state.json $OUT/lift_state.json 2>/dev/null
tail -n 200 $W/lift/put_the_banana_in_the_bowl/ppo_k1/metrics.jsonl > $OUT/metrics_tail.jsonl 2>/dev/null
collect_logs
