#!/bin/bash
# The next GPU session's plan for issue 15 (one H200 host, 16 CPU cores; planned, not run): what the issue's
# measure still lacks after the eleventh session (benchmarks/README.md): a multi-object prompt, and K = 1 against
# K = 10 at equal training. Every BC and PPOFlow setting is the eleventh session's.
# A: BC for both prompts at once (two benchmarks/bc_scaling.py processes, 7 env workers each): per prompt a pool of
#    40 scenes (seed 0), 20 held-out scenes (seed 1), 50 demonstrations under the default DR (episodes of 300 steps,
#    400 for the two-object prompt; the policies' envs inherit the limit), BC on them (3,000 steps), scored on 30 pool and 20 held-out episodes -> $OUT/bc_dr_s12_{banana,multi}.json. Call A again if a
#    process ran out of its budget (it resumes).
# B, C: three benchmarks/ppoflow_lift.py processes at once, 5 envs each, each stopping at 150,000 env steps (so
#    K = 1 and K = 10 get equal training) or 13 minutes of wall-clock: the banana prompt at K = 1 and at K = 10
#    (only the last of the ten transitions noisy and scored: --ft-steps 1), and "put the apple and the banana in
#    the bowl" at K = 1; every policy scored on 30 episodes of its pool (nominal and under DR) and of its held-out
#    scenes -> $OUT/ppoflow_lift_s12_{k1,k10,multi}.json. C again (it resumes) until all three say "all stages done".
# Calls back to back on one warm machine, each under 10 minutes:
#     bash benchmarks/gpu_session12.sh A; bash benchmarks/gpu_session12.sh B; bash benchmarks/gpu_session12.sh C
# The machine is given back after 30 s idle, and the work folder with it. Run in the twelfth session, A and B went
# through and the machine was gone before C (benchmarks/README.md). To train and score in one call after A, so that
# a lost machine loses no result: PPO_MIN=6 PPO_STEPS=100000 BC_KS= bash benchmarks/gpu_session12.sh B
# (BC_KS empty: the BC baseline is A's scores, pool and held-out, nominal; 6 min of PPOFlow leave ~150 s to score).
# ABL (issue 17's knob ablation, one call on a fresh machine, run in the twelfth session with the device time B left):
#    benchmarks/ablation.py, BC learner, N in {10, 50} x DR on / off, one training seed, 100 demonstrations and
#    1,500 BC steps per run (the sixth session's 2,500 do not fit one call), the four runs at once
#    -> $OUT/ablation_dr_s12.json, .md, .png.
PH=$1
BC_OUT=unused.json; . benchmarks/gpu_common.sh
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
M="put the apple and the banana in the bowl"; MS=put_the_apple_and_the_banana_in_the_bowl
PPO="--decisions-per-env 96 --minibatch-size 128 --critic-warmup-iters 3 --sigma-min 0.2 --sigma-max 0.4 \
--lr-noise 1e-4 --clip-eps 0.2 --adaptive-lr --target-kl 0.05 --lr-actor 1e-5 --critic-privileged --grad-diag \
--freeze-encoder"
bc() {  # $1 prompt, $2 tag, $3 episode step limit (two goals need more than 300: the expert timed out 11 of 15 times at 200)
  timeout 580 python3 benchmarks/bc_scaling.py --work $W/bcs_$2 --device cuda --budget 550 --prompts "$1" \
    --episodes 50 --pool-scenes 40 --held-scenes 20 --steps 3000 --image-size 64 --workers 7 --randomize --max-steps $3 \
    --eval-episodes 30 --held-episodes 20 --out $OUT/bc_dr_s12_$2.json >> $G/bc_$2.log 2>&1
  cp $W/bcs_$2/state.json $OUT/bcs_state_$2.json 2>/dev/null; }
lift() {  # $1 prompt, $2 BC work tag, $3 K, $4 tag, $5 BC K values scored here (none: scored by another process)
  local base=$W/bcs_$2/$(echo "$1" | tr ' ' _)
  timeout 590 python3 benchmarks/ppoflow_lift.py --work $W/lift_$4 --device cuda --budget 545 --prompts "$1" \
    --init-bc $base/bc_50 --train-pack $base/pool --held-pack $base/held --ks $3 --ppo-minutes ${PPO_MIN:-13} --ppo-steps ${PPO_STEPS:-150000} \
    --num-envs 5 --workers 5 --eval-episodes 30 --eval-dr --no-numerics --bc-ks $5 --ppo-args "$PPO" \
    --out $OUT/ppoflow_lift_s12_$4.json >> $G/lift_$4.log 2>&1
  cp $W/lift_$4/state.json $OUT/lift_state_$4.json 2>/dev/null
  cp $W/lift_$4/*/ppo_k$3/metrics.jsonl $OUT/ppoflow_metrics_s12_$4.jsonl 2>/dev/null; }
case $PH in
A) bc "$P" banana 300 & bc "$M" multi 400 & wait ;;
B|C) lift "$P" banana 1 k1 "${BC_KS-10}" & lift "$P" banana 10 k10 "" & lift "$M" multi 1 multi "${BC_KS-10}" & wait ;;
ABL) timeout 560 python3 benchmarks/ablation.py --work $W/abl12 --device cuda --budget 500 --prompt "$P" \
    --learner bc --cameras front,wrist --n 10,50 --dr on,off --seeds 1 --bc-demos 100 --bc-steps 1500 \
    --bc-batch-size 128 --ood-configs 40 --id-configs 30 --max-steps 300 --image-size 64 --concurrent 4 \
    --backend process --workers 14 --eval-workers 3 --scaling '' --json $OUT/ablation_dr_s12.json >> $G/abl.log 2>&1
  cp $W/abl12/abl/results.md $OUT/ablation_dr_s12.md 2>/dev/null; cp $W/abl12/abl/results.png $OUT/ablation_dr_s12.png
  cp $W/abl12/state.json $OUT/ablation_state_s12.json 2>/dev/null ;;
*) echo "usage: bash $0 A|B|C|ABL" >&2; exit 2 ;;
esac
collect_logs
