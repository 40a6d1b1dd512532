#!/bin/bash
# The GPU session that produced bc_scaling.json, ppoflow_lift.json and lerobot_load.json (2026-12-01, one H200).
# Run from the repo root on the GPU machine after `bash ../shared/device/wheels.sh ...` built .whl/ (see
# benchmarks/README.md), as three back-to-back calls on one warm machine (each under 10 minutes; every script
# resumes from its state.json):
#     bash benchmarks/gpu_session.sh A; bash benchmarks/gpu_session.sh B; bash benchmarks/gpu_session.sh C
# A: LeRobot load proof, pretrained-backbone check, BC data scaling (pack, 400 demos, 4 sizes trained at once).
# B: BC scaling continues (training, evaluation); PPOFlow lift starts from bc_400 once it is trained.
# C: both finish.  (In the session, A also started benchmarks/ablation.py, which overran its budget and was
# dropped; it is not part of this script.)
PH=$1
[ -d /tmp/site/pybullet_data ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
  --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 MPLBACKEND=Agg
OUT=${OUT:-benchmarks}; W=${WORK:-/root/gpu}; G=$W/logs; mkdir -p $W $G
P="put the banana in the bowl"
T0=$(date +%s); elapsed() { echo $(( $(date +%s) - T0 )); }
bcs() { python3 benchmarks/bc_scaling.py --work $W/bcs --device cuda --budget $1 --prompts "$P" --episodes 50 100 200 400 \
  --pool-scenes 40 --held-scenes 20 --steps 6000 --image-size 64 --eval-episodes 80 --held-episodes 40 --workers 12 \
  --parallel-train --out $OUT/bc_scaling.json >> $G/bc.log 2>&1; }
B=$W/bcs/put_the_banana_in_the_bowl
lift() { python3 benchmarks/ppoflow_lift.py --work $W/lift --device cuda --budget $1 --prompts "$P" --init-bc $B/bc_400 \
  --train-pack $B/pool --held-pack $B/held --ks 1 --ppo-minutes 4 --num-envs 8 --workers 8 --eval-episodes 40 \
  --ppo-args "--decisions-per-env 16 --minibatch-size 128 --clip-eps 0.01 --lr-actor 1e-5" \
  --out $OUT/ppoflow_lift.json >> $G/lift.log 2>&1; }
case $PH in
A) (python3 benchmarks/lerobot_load.py --work /tmp/lr --out $OUT/lerobot_load.json > $G/lerobot_load.log 2>&1
    python3 benchmarks/backbone_check.py --out $OUT/backbone_check.json --device cuda > $G/backbone.log 2>&1) &
   bcs 525; wait ;;
B) bcs 540 &
   while ! grep -q '"put_the_banana_in_the_bowl/bc_400"' $W/bcs/state.json 2>/dev/null; do
     sleep 5; [ "$(elapsed)" -gt 440 ] && break; done
   L=$(( 540 - $(elapsed) )); [ $L -gt 90 ] && lift $L; wait ;;
C) bcs 500 & lift 500; wait ;;
*) echo "usage: bash benchmarks/gpu_session.sh A|B|C" >&2; exit 2 ;;
esac
