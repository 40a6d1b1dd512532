#!/bin/bash
# A later GPU session's plan (one H200, 16 CPU cores; planned, not run): the fifth session's PPOFlow run
# (benchmarks/README.md) again, with what it showed was missing -> ppoflow_lift_s7.json (issue 15):
# - the critic trains on after the policy's KL stop (--critic-after-stop, now the default: in the fifth
#   session the stop cut the critic short in 73% of updates, explained variance ~0.33);
# - 64 decisions per env and update instead of 32 (~35 episodes an update instead of ~17);
# - --grad-diag: the cosine of two half-batches' policy gradients, i.e. whether a batch's gradient is signal.
#   It also logs what each update's KL came from (kl_mean_part: the actor's means; kl_std_part: the noise's stds).
# - --freeze-encoder: the BC policy's observation encoder stays fixed and only the action expert trains. On CPU
#   (benchmarks/ppoflow_kl_split.py -> ppoflow_kl_split.json) one Adam step at the fifth session's settings moved
#   the chain by 1.2-6.9 nats, all of it the means, and by 0.11-0.19 nats with the encoder frozen: the trust region
#   the encoder's sensitivity forced on the whole policy throttled the action expert with it.
# Run from the repo root on the GPU machine after `bash ../shared/device/wheels.sh ...` built .whl/ (see
# benchmarks/README.md), as three back-to-back calls on one warm machine, each under 10 minutes:
#     bash benchmarks/gpu_session7.sh A; bash benchmarks/gpu_session7.sh B; bash benchmarks/gpu_session7.sh C
# A: the pool (40 scenes, seed 0), held-out scenes (20, seed 1), 100 demonstrations under the default DR and BC
#    on them (5000 steps), as in the fifth session; then the BC policy scored and PPOFlow started.
# B, C: PPOFlow K=1 with 14 envs, privileged and timed critic, adaptive learning rates at a whole-chain target
#    KL of 0.05, clip 0.2, 11.5 minutes; every policy scored on nominal pool and held-out scenes and under DR.
PH=$1
BC_OUT=bc_dr100_s7.json; LIFT_OUT=ppoflow_lift_s7.json; . benchmarks/gpu_common.sh
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
PPO="--decisions-per-env 64 --minibatch-size 128 --critic-warmup-iters 3 --sigma-min 0.05 --sigma-max 0.1 \
--lr-noise 1e-4 --clip-eps 0.2 --adaptive-lr --target-kl 0.05 --lr-actor 3e-6 --critic-privileged --grad-diag --freeze-encoder"
lift_session "$PH" 450
