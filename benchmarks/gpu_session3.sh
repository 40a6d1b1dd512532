#!/bin/bash
# The third GPU session (one H200, 16 CPU cores): rejection fine-tuning's lift, and PPOFlow from RFT vs from BC
# (issues 15 and 16) -> ppoflow_lift_bc100.json (BC, PPOFlow from BC) and ppoflow_lift_rft.json (RFT, PPOFlow
# from RFT). Run from the repo root on the GPU machine after `bash ../shared/device/wheels.sh ...` built .whl/
# (see benchmarks/README.md), as three back-to-back calls on one warm machine, each under 10 minutes (every
# script resumes from its own state):
#     bash benchmarks/gpu_session3.sh A; bash benchmarks/gpu_session3.sh B; bash benchmarks/gpu_session3.sh C
# A: the same pool (40 scenes, seed 0) and held-out scenes (20, seed 1) as gpu_session2.sh, 100 demonstrations
#    under the env's default DR, BC on 50 and 100 of them (5000 steps); then the BC-100 policy scored on both.
# B, C: two calls of benchmarks/ppoflow_lift.py side by side, the same PPOFlow settings and wall-clock:
#    bc:  PPOFlow K=1 from BC-100;
#    rft: `train rft` from BC-100 (rollouts on the pool under DR, successes mixed with the demos), scored,
#         then PPOFlow K=1 from it.
PH=$1
. benchmarks/gpu_common.sh  # (its bcs below replaces the shared one)
bcs() { timeout $(( $1 + 45 )) python3 benchmarks/bc_scaling.py --work $W/bcs --device cuda --budget $1 --prompts "$P" \
  --episodes 50 100 --pool-scenes 40 --held-scenes 20 --steps 5000 --image-size 64 --workers 14 --randomize \
  --skip-eval --parallel-train --out $OUT/bc_dr100.json >> $G/bc.log 2>&1; }
PPO="--decisions-per-env 32 --minibatch-size 128 --clip-eps 0.02 --lr-actor 5e-5 --lr-noise 3e-5 --target-kl 0.02 \
--normalize-logprob --critic-warmup-iters 3 --sigma-min 0.05 --sigma-max 0.1"
lift() {  # $1 budget, $2 tag (bc|rft), then extra options
  local bud=$1 tag=$2; shift 2
  timeout $(( bud + 45 )) python3 benchmarks/ppoflow_lift.py --work $W/lift_$tag --device cuda --budget $bud \
    --prompts "$P" --init-bc $B/bc_100 --train-pack $B/pool --held-pack $B/held --ks 1 --ppo-minutes 7 \
    --num-envs 8 --workers 8 --eval-episodes 40 --ppo-args "$PPO" --out $OUT/ppoflow_lift_$tag.json "$@" \
    >> $G/lift_$tag.log 2>&1; }
bc_lift() { lift $1 bc --bc-ks 10 --ppo-from bc; }
rft_lift() { lift $1 rft --bc-ks --no-numerics --rft-rollouts 240 --rft-steps 2000 --ppo-from rft; }
case $PH in
A) bcs 430; done_bc && bc_lift $(left 570) ;;
B) done_bc || bcs 300; L=$(left 570); bc_lift $L & rft_lift $L; wait ;;
C) bc_lift 560 & rft_lift 560; wait ;;
*) echo "usage: bash benchmarks/gpu_session3.sh A|B|C" >&2; exit 2 ;;
esac
cp $W/bcs/state.json $OUT/bcs_state.json 2>/dev/null
for t in bc rft; do cp $W/lift_$t/state.json $OUT/lift_${t}_state.json 2>/dev/null; done
collect_logs
