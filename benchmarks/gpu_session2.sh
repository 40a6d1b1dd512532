#!/bin/bash
# The GPU session that produced bc_dr.json, ppoflow_lift_bc50.json, correlation_bc.json and backbone_check.json
# (one H200, 16 CPU cores). Run from the repo root on the GPU machine after `bash ../shared/device/wheels.sh ...`
# built .whl/ (see benchmarks/README.md), as three back-to-back calls on one warm machine, each under 10 minutes
# (every script resumes from its own state):
#     bash benchmarks/gpu_session2.sh A; bash benchmarks/gpu_session2.sh B; bash benchmarks/gpu_session2.sh C
# A: backbone check; BC on demonstrations recorded under the env's default DR: one pool (40 scenes) and held-out
#    scenes (20), 200 demos, sizes 25/50/100/200 trained at once for 5000 steps (checkpoints every 1000).
#    Then the two frozen eval sets of the pool's scenes: nominal, and shifted (benchmarks/correlation.py TARGET_DR).
# B, C: PPOFlow K=1 from the 50-demo BC under DR (the lift), beside the correlation of 8 BC checkpoints (4 sizes x
#    steps 2000 and 5000) scored on both sets.
PH=$1
[ -d /tmp/site/pybullet_data ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
  --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 MPLBACKEND=Agg
OUT=${OUT:-benchmarks}; W=${WORK:-/root/gpu}; G=$W/logs; mkdir -p $W $G
P="put the banana in the bowl"; B=$W/bcs/put_the_banana_in_the_bowl; S=$W/sets
T0=$(date +%s); left() { echo $(( $1 - ($(date +%s) - T0) )); }
bcs() { timeout $(( $1 + 45 )) python3 benchmarks/bc_scaling.py --work $W/bcs --device cuda --budget $1 --prompts "$P" --episodes 25 50 100 200 \
  --pool-scenes 40 --held-scenes 20 --steps 5000 --image-size 64 --workers 14 --randomize --skip-eval --parallel-train \
  --out $OUT/bc_dr.json >> $G/bc.log 2>&1; }
sets() { python3 benchmarks/correlation.py --make-from $B/pool -n 20 --sets-dir $S --max-steps 300 --sets-only \
  >> $G/corr.log 2>&1; }
CK=""; for n in 25 50 100 200; do for s in 0002000 0005000; do CK="$CK --policy $B/bc_$n/checkpoints/step-$s/policy"; done; done
corr() { timeout $(( $1 + 120 )) python3 benchmarks/correlation.py --nominal $S/nominal --target $S/target $CK --cameras front,wrist \
  --image-size 64 --jobs 6 --budget $1 --runs-dir $W/corr_runs -o $OUT/correlation_bc.json >> $G/corr.log 2>&1; }
lift() { timeout $(( $1 + 45 )) python3 benchmarks/ppoflow_lift.py --work $W/lift --device cuda --budget $1 --prompts "$P" --init-bc $B/bc_50 \
  --train-pack $B/pool --held-pack $B/held --ks 1 --bc-ks 10 1 --ppo-minutes 8 --num-envs 10 --workers 8 \
  --eval-episodes 40 --ppo-args "--decisions-per-env 32 --minibatch-size 160 --clip-eps 0.01 --lr-actor 1e-5 \
  --lr-noise 1e-5 --target-kl 0.01 --normalize-logprob --critic-warmup-iters 3 --sigma-min 0.05 --sigma-max 0.1" --out $OUT/ppoflow_lift_bc50.json \
  >> $G/lift.log 2>&1; }
done_bc() { grep -q '"put_the_banana_in_the_bowl/bc_200"' $W/bcs/state.json 2>/dev/null; }
case $PH in
A) python3 benchmarks/backbone_check.py --out $OUT/backbone_check.json --device cuda > $G/backbone.log 2>&1 &
   bcs 500; done_bc && sets; wait ;;
B) done_bc || bcs 300; [ -f $S/target/evalset.json ] || sets
   L=$(left 520); corr $((L - 130)) & lift $L; wait ;;
C) corr 390 & lift 520; wait ;;
*) echo "usage: bash benchmarks/gpu_session2.sh A|B|C" >&2; exit 2 ;;
esac
cp $W/bcs/state.json $OUT/bcs_state.json 2>/dev/null; cp $W/lift/state.json $OUT/lift_state.json 2>/dev/null
for f in $G/*.log; do echo "=== $f"; tail -n 50 $f | cut -c1-300; done > $OUT/logs.txt; nvidia-smi >> $OUT/logs.txt
