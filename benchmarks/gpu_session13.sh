#!/bin/bash
# The thirteenth GPU session's plan for issue 15 (one GPU host, 16 CPU cores): PPOFlow with GRPO-style episode
# groups (--group-size, rl/ppoflow_rollout.py), the baseline the measured gradient noise asks for, and the scores
# the twelfth session lost (two prompts; K = 1 against K = 10 at equal env steps), each call training and scoring.
# A: BC for both prompts at once, the twelfth session's recipe (benchmarks/bc_scaling.py, 7 env workers each):
#    per prompt a pool of 40 scenes (seed 0), 20 held-out scenes (seed 1), 50 demonstrations under the default DR,
#    BC on them (3,000 steps), scored noise-free on 30 pool and 20 held-out episodes -> $OUT/bc_dr_s13_{banana,multi}.json.
# B: three benchmarks/ppoflow_lift.py processes at once, 5 envs each in one group of 5 (same reset seed), 3 rounds
#    an iteration (15 episodes an update), each to 80,000 env steps (equal training) or 6 minutes: the banana
#    prompt at K = 1 and at K = 10 (ppoflow_lift.py gives K > 1 --ft-steps 1), the two-object prompt at K = 1; then each policy scored on 30 episodes of
#    its pool (nominal and under DR) and of its held-out scenes -> $OUT/ppoflow_lift_s13_{k1,k10,multi}.json.
# C: the lift attempt with every core: the banana prompt at K = 1, 15 envs in 3 groups of 5, 2 rounds an iteration
#    (30 episodes an update), 5.5 minutes, then BC (K = 10) and the fine-tuned policy scored on 40 episodes of the
#    pool (nominal and under DR) and of the held-out scenes -> $OUT/ppoflow_lift_s13_c.json.
# Every other PPOFlow setting is the eleventh and twelfth sessions' (sigma in [0.2, 0.4] from 0.3, target KL 0.05,
# adaptive lr from 1e-5, clip 0.2, privileged timed critic, encoder frozen, --grad-diag, which with groups also
# measures the same rollouts' noise scale with the critic's baseline). Calls back to back on one warm machine
# (it is given back after 30 s idle, with its work folder):
#     bash benchmarks/gpu_session13.sh A; bash benchmarks/gpu_session13.sh B; bash benchmarks/gpu_session13.sh C
PH=$1
BC_OUT=unused.json; . benchmarks/gpu_common.sh
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
M="put the apple and the banana in the bowl"
PPO="--minibatch-size 128 --critic-warmup-iters 2 --sigma-min 0.2 --sigma-max 0.4 --lr-noise 1e-4 --clip-eps 0.2 \
--adaptive-lr --target-kl 0.05 --lr-actor 1e-5 --critic-privileged --grad-diag --freeze-encoder --group-size 5"
bc() {  # $1 prompt, $2 tag, $3 episode step limit
  timeout 580 python3 benchmarks/bc_scaling.py --work $W/bcs_$2 --device cuda --budget 550 --prompts "$1" \
    --episodes 50 --pool-scenes 40 --held-scenes 20 --steps 3000 --image-size 64 --workers 7 --randomize --max-steps $3 \
    --eval-episodes 30 --held-episodes 20 --out $OUT/bc_dr_s13_$2.json >> $G/bc_$2.log 2>&1
  cp $W/bcs_$2/state.json $OUT/bcs_state_$2.json 2>/dev/null; }
lift() {  # $1 prompt, $2 BC tag, $3 K, $4 tag, $5 envs, $6 rounds, $7 eval episodes, $8 BC K values scored here
  local base=$W/bcs_$2/$(echo "$1" | tr ' ' _)
  timeout 590 python3 benchmarks/ppoflow_lift.py --work $W/lift_$4 --device cuda --budget 570 --prompts "$1" \
    --init-bc $base/bc_50 --train-pack $base/pool --held-pack $base/held --ks $3 --ppo-minutes ${PPO_MIN:-6} \
    --ppo-steps ${PPO_STEPS:-80000} --num-envs $5 --workers $5 --eval-episodes $7 --eval-dr --no-numerics \
    --bc-ks $8 --ppo-args "$PPO --group-rounds $6" \
    --out $OUT/ppoflow_lift_s13_$4.json >> $G/lift_$4.log 2>&1
  cp $W/lift_$4/state.json $OUT/lift_state_$4.json 2>/dev/null
  cp $W/lift_$4/*/ppo_k$3/metrics.jsonl $OUT/ppoflow_metrics_s13_$4.jsonl 2>/dev/null; }
case $PH in
A) bc "$P" banana 300 & bc "$M" multi 400 & wait ;;
B) lift "$P" banana 1 k1 5 3 30 "" & lift "$P" banana 10 k10 5 3 30 "" & lift "$M" multi 1 multi 5 3 30 "" & wait ;;
C) PPO_STEPS=${PPO_STEPS:-1000000} PPO_MIN=${PPO_MIN:-5.5} lift "$P" banana 1 c 15 2 40 10 ;;
*) echo "usage: bash $0 A|B|C" >&2; exit 2 ;;
esac
collect_logs
