#!/bin/bash
# The fifth GPU session (one H200, 16 CPU cores; run 2026-12-02, results in benchmarks/README.md): PPOFlow with everything the fourth session
# lacked, in one run with all the cores (issue 15) -> ppoflow_lift_s5.json. Run from the repo root on the GPU
# machine after `bash ../shared/device/wheels.sh ...` built .whl/ (see benchmarks/README.md), as three
# back-to-back calls on one warm machine, each under 10 minutes (every script resumes from its own state):
#     bash benchmarks/gpu_session5.sh A; bash benchmarks/gpu_session5.sh B; bash benchmarks/gpu_session5.sh C
# A: the pool (40 scenes, seed 0) and held-out scenes (20, seed 1) of the earlier sessions, 100 demonstrations
#    under the default DR (now centred on the nominal scene: the table's tint bug is fixed, so the fourth
#    session's BC cannot be reused), BC on them (5000 steps); then the BC policy scored and PPOFlow started.
# B, C: one benchmarks/ppoflow_lift.py run with 14 envs (chunks render only their last observation), the
#    critic reading the privileged state and the episode's time, adaptive learning rates at a whole-chain
#    target KL of 0.05, clip 0.2, 11.5 minutes of PPOFlow (planned 16; cut so the scores fit the device time); every policy scored on nominal pool and held-out
#    scenes and under the training DR on the pool. One thread per env process (16 processes share 16 cores).
PH=$1
BC_OUT=bc_dr100_s5.json; LIFT_OUT=ppoflow_lift_s5.json; . benchmarks/gpu_common.sh
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
PPO="--decisions-per-env 32 --minibatch-size 128 --critic-warmup-iters 3 --sigma-min 0.05 --sigma-max 0.1 \
--lr-noise 1e-4 --clip-eps 0.2 --adaptive-lr --target-kl 0.05 --lr-actor 3e-6 --critic-privileged"
lift_session "$PH" 400
