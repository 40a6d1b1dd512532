#!/bin/bash
# The next GPU session's plan (one H200, 16 CPU cores; not run yet): the diversity ablation over N with the
# learner that works today, behaviour cloning (issue 17) -> ablation_bc_s6.json. PPOFlow has not lifted BC in
# the fifth session (benchmarks/README.md), so PPOFlow arms would only repeat their shared BC start; here every
# run trains a fresh FlowVLA on 100 expert demonstrations of its own N scenes (front and wrist cameras, 64 px,
# under the default DR, 2,500 BC steps of 128), so the number of distinct scenes is the only variable; ID (30
# configurations over the arm's scenes) and OOD (40 configurations of another seed) success with 95% intervals.
# N in 1, 5, 10, 25, 50; 2 training seeds per arm; 3 runs at a time (5 recording / evaluation processes each; 4 and
# 4 in call B). Run in the sixth session (2026-12-02): 3 runs done after A, 7 after B, all 10 after C (1,558 s of
# ablation in all; ~290-360 s of BC and ~110-150 s of scoring per run, slower than the ~22 min estimated).
# Run from the repo root on the GPU machine after `bash ../shared/device/wheels.sh ...` built .whl/, as three
# back-to-back calls on one warm machine, each under 10 minutes (the benchmark resumes from its state):
#     bash benchmarks/gpu_session6.sh A; bash benchmarks/gpu_session6.sh B; bash benchmarks/gpu_session6.sh C
PH=$1
. benchmarks/gpu_common.sh
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
C3=3; E5=5
abl() {  # $1 budget
  timeout $(( $1 + 60 )) python3 benchmarks/ablation.py --work $W/abl6 --device cuda --budget $1 --prompt "$P" \
    --learner bc --cameras front,wrist --n 1,5,10,25,50 --seeds 2 --bc-demos 100 --bc-steps 2500 --bc-batch-size 128 \
    --ood-configs 40 --id-configs 30 --max-steps 300 --image-size 64 --concurrent $C3 --backend process \
    --workers 14 --eval-workers $E5 --scaling '' --json $OUT/ablation_bc_s6.json >> $G/abl.log 2>&1; }
case $PH in
A) abl 540 ;;
B) C3=4; E5=4; abl 540 ;;
C) abl 385 ;;
*) echo "usage: bash benchmarks/gpu_session6.sh A|B|C" >&2; exit 2 ;;
esac
cp $W/abl6/state.json $OUT/abl_state.json 2>/dev/null
cp $W/abl6/abl/results.md $OUT/ablation_bc_s6.md 2>/dev/null; cp $W/abl6/abl/results.png $OUT/ablation_bc_s6.png 2>/dev/null
collect_logs
