#!/bin/bash
# What the GPU-session scripts share (sourced by gpu_session4.sh and later, from the repo root on the GPU machine):
# the wheel install, the environment, the work folders, the banana prompt's packs and BC (`bcs BUDGET`, writing
# $OUT/$BC_OUT), `left BUDGET` (seconds left of it), `done_bc`, and `collect_logs` (the logs' tails and
# nvidia-smi into $OUT/logs.txt).
[ -d /tmp/site/pybullet_data ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
  --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 MPLBACKEND=Agg
OUT=${OUT:-benchmarks}; W=${WORK:-/root/gpu}; G=$W/logs; mkdir -p $W $G
P="put the banana in the bowl"; B=$W/bcs/put_the_banana_in_the_bowl
T0=$(date +%s); left() { echo $(( $1 - ($(date +%s) - T0) )); }
bcs() { timeout $(( $1 + 45 )) python3 benchmarks/bc_scaling.py --work $W/bcs --device cuda --budget $1 --prompts "$P" \
  --episodes 100 --pool-scenes 40 --held-scenes 20 --steps 5000 --image-size 64 --workers 14 --randomize \
  --skip-eval --out $OUT/$BC_OUT >> $G/bc.log 2>&1; }
done_bc() { grep -q '"put_the_banana_in_the_bowl/bc_100"' $W/bcs/state.json 2>/dev/null; }
collect_logs() { for f in $G/*.log; do echo "=== $f"; tail -n 60 $f | cut -c1-300; done > $OUT/logs.txt
  nvidia-smi >> $OUT/logs.txt; }
