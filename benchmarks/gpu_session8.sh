#!/bin/bash
# The next GPU session's plan (one H200, 16 CPU cores; planned, not run). The seventh session's PPOFlow run
# (benchmarks/README.md) froze the encoder and doubled the batch and still did not lift BC: the cosine between the
# policy gradients of two random halves of each rollout was -0.03 +- 0.14 over 67 updates, i.e. ~34 episodes an
# update carry no measurable gradient. This session measures how many episodes would (issue 15), then runs either
# PPOFlow at the noise level that needs the fewest, or the DR on/off knob ablation with BC (issue 17):
# A: the fifth/seventh sessions' pool, held-out scenes, 100 DR demonstrations and BC (5000 steps), then
#    benchmarks/ppoflow_noise_scale.py at sigma 0.075 (the runs so far) and 0.3: the policy held still, 3 critic-only
#    iterations, 4 measured ones of 14 envs x 64 decisions -> ppoflow_noise_scale_s8.json (resumes in B).
# B, C (PPO): PPOFlow K=1 at sigma in [0.15, 0.30], 128 decisions per env, encoder frozen, as gpu_session7.sh otherwise
#    (run when A's noise scale at sigma 0.3 is within a few hundred episodes).
# B, C (ABL): the ablation of gpu_session6.sh at N in 10, 50 with DR on and off (2 seeds, 4 runs at a time).
# Calls back to back on one warm machine, each under 10 minutes:
#     bash benchmarks/gpu_session8.sh A; bash benchmarks/gpu_session8.sh B_PPO|B_ABL; bash benchmarks/gpu_session8.sh C_PPO|C_ABL
PH=$1
BC_OUT=bc_dr100_s8.json; LIFT_OUT=ppoflow_lift_s8.json; . benchmarks/gpu_common.sh
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
PPO="--decisions-per-env 128 --minibatch-size 128 --critic-warmup-iters 3 --sigma-min 0.15 --sigma-max 0.3 \
--lr-noise 1e-4 --clip-eps 0.2 --adaptive-lr --target-kl 0.05 --lr-actor 3e-6 --critic-privileged --grad-diag --freeze-encoder"
probe() {  # $1 budget
  timeout $(( $1 + 45 )) python3 benchmarks/ppoflow_noise_scale.py --init $B/bc_100 --pack $B/pool --work $W/probe \
    --device cuda --sigmas 0.075,0.3 --num-envs 14 --decisions-per-env 64 --warmup 3 --measure 4 --budget $1 \
    --out $OUT/ppoflow_noise_scale_s8.json >> $G/probe.log 2>&1; }
abl() {  # $1 budget
  timeout $(( $1 + 60 )) python3 benchmarks/ablation.py --work $W/abl8 --device cuda --budget $1 --prompt "$P" \
    --learner bc --cameras front,wrist --n 10,50 --dr on,off --seeds 2 --bc-demos 100 --bc-steps 2500 \
    --bc-batch-size 128 --ood-configs 40 --id-configs 30 --max-steps 300 --image-size 64 --concurrent 4 \
    --backend process --workers 14 --eval-workers 3 --scaling '' --json $OUT/ablation_dr_s8.json >> $G/abl.log 2>&1
  cp $W/abl8/abl/results.md $OUT/ablation_dr_s8.md 2>/dev/null; cp $W/abl8/abl/results.png $OUT/ablation_dr_s8.png 2>/dev/null; }
case $PH in
A) bcs 450; done_bc && probe $(left 560) ;;
B_PPO) probe 200; lift_session B 300 ;;
C_PPO) lift_session C ;;
B_ABL) abl 540 ;;
C_ABL) abl 540 ;;
*) echo "usage: bash $0 A|B_PPO|C_PPO|B_ABL|C_ABL" >&2; exit 2 ;;
esac
collect_logs
