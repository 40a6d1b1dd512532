#!/bin/bash
# The fourth GPU session (one H200, 16 CPU cores): PPOFlow with the executed actions scored, a critic that reads
# the episode's time, the trust region on the whole chain and learning rates steered by the KL the updates reach
# (issue 15) -> ppoflow_lift_s4_kl02.json and ppoflow_lift_s4_kl10.json. Run from the repo root on the GPU machine after `bash ../shared/device/wheels.sh ...`
# built .whl/ (see benchmarks/README.md), as three back-to-back calls on one warm machine, each under 10 minutes
# (every script resumes from its own state):
#     bash benchmarks/gpu_session4.sh A; bash benchmarks/gpu_session4.sh B; bash benchmarks/gpu_session4.sh C
# A: the pool (40 scenes, seed 0) and held-out scenes (20, seed 1) of the earlier sessions, 100 demonstrations
#    under the env's default DR, BC on them (5000 steps); then the BC policy scored (kl02) while PPOFlow starts
#    (kl10).
# B, C: two calls of benchmarks/ppoflow_lift.py side by side from the same BC, the same wall-clock, summed
#    (unnormalised) log-probabilities of the executed actions, the critic with the episode's time, clip 0.2,
#    adaptive learning rates (a CPU check: one Adam step at 3e-5 moved a FlowVLA's chain by 1-14 nats), and
#    kl02: whole-chain target KL 0.02 (actor lr from 3e-6); kl10: target KL 0.1 (actor lr from 1e-5).
#    Every policy is scored on nominal pool and held-out scenes and under the training DR on the pool.
PH=$1
BC_OUT=bc_dr100_s4.json; . benchmarks/gpu_common.sh
COMMON="--decisions-per-env 32 --minibatch-size 128 --critic-warmup-iters 3 --sigma-min 0.05 --sigma-max 0.1 \
--lr-noise 1e-4"
KL02="$COMMON --clip-eps 0.2 --adaptive-lr --target-kl 0.02 --lr-actor 3e-6"
KL10="$COMMON --clip-eps 0.2 --adaptive-lr --target-kl 0.1 --lr-actor 1e-5"
lift() {  # $1 budget, $2 tag (kl02|kl10), $3 PPO settings, then extra options
  local bud=$1 tag=$2 args=$3; shift 3
  timeout $(( bud + 45 )) python3 benchmarks/ppoflow_lift.py --work $W/lift_$tag --device cuda --budget $bud \
    --prompts "$P" --init-bc $B/bc_100 --train-pack $B/pool --held-pack $B/held --ks 1 --ppo-minutes 12 \
    --num-envs 8 --workers 8 --eval-episodes 40 --eval-dr --no-numerics --ppo-args "$args" \
    --out $OUT/ppoflow_lift_s4_$tag.json "$@" >> $G/lift_$tag.log 2>&1; }
kl02() { lift $1 kl02 "$KL02" --bc-ks 10; }
kl10() { lift $1 kl10 "$KL10" --bc-ks; }
case $PH in
A) bcs 400; done_bc && { L=$(left 570); kl02 $L & kl10 $L; wait; } ;;
B) done_bc || bcs 300; L=$(left 570); kl02 $L & kl10 $L; wait ;;
C) kl02 560 & kl10 560; wait ;;
*) echo "usage: bash benchmarks/gpu_session4.sh A|B|C" >&2; exit 2 ;;
esac
cp $W/bcs/state.json $OUT/bcs_state.json 2>/dev/null
for t in kl02 kl10; do cp $W/lift_$t/state.json $OUT/lift_${t}_state.json 2>/dev/null; done
collect_logs
