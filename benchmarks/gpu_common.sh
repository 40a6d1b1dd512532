#!/bin/bash
# What the GPU-session scripts share (sourced by gpu_session4.sh and later, from the repo root on the GPU machine):
# the wheel install, the environment, the work folders, the banana prompt's packs and BC (`bcs BUDGET`, writing
# $OUT/$BC_OUT), `left BUDGET` (seconds left of it), `done_bc`, `collect_logs` (the logs' tails and
# nvidia-smi into $OUT/logs.txt), and `lift_session PHASE BC_BUDGET`: one benchmarks/ppoflow_lift.py run from that
# BC (settings $PPO, results $OUT/$LIFT_OUT) over three calls A (BC, then PPOFlow), B and C.
[ -d /tmp/site/pybullet_data ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
  --upgrade --target /tmp/site .whl/*.whl || exit 1
# .whl/ must hold (the GPU machine has torch, numpy, scipy, networkx, click, tqdm, pillow, matplotlib): pybullet,
# coacd, trimesh, gymnasium, farama-notifications, cloudpickle, shapely, rtree, manifold3d, fast_simplification,
# jsonschema, jsonschema-specifications, referencing, rpds-py, attrs and av (the demonstrations' videos)
PYTHONPATH=/tmp/site python3 -c "import pybullet, coacd, trimesh, gymnasium, shapely, rtree, manifold3d, jsonschema, av" \
  || { echo "a wheel is missing from .whl/ (see the list in benchmarks/gpu_common.sh)" >&2; exit 1; }
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
lift() {  # $1 budget
  timeout $(( $1 + 45 )) python3 benchmarks/ppoflow_lift.py --work $W/lift --device cuda --budget $1 \
    --prompts "$P" --init-bc $B/bc_100 --train-pack $B/pool --held-pack $B/held --ks 1 --ppo-minutes 11.5 \
    --num-envs 14 --workers 14 --eval-episodes 40 --eval-dr --no-numerics --bc-ks 10 --ppo-args "$PPO" \
    --out $OUT/$LIFT_OUT >> $G/lift.log 2>&1; }
lift_session() {  # $1 phase A|B|C, $2 phase A's BC budget
  case $1 in
  A) bcs $2; done_bc && lift $(left 570) ;;
  B) done_bc || bcs 300; lift $(left 570) ;;
  C) lift 540 ;;
  *) echo "usage: bash $0 A|B|C" >&2; exit 2 ;;
  esac
  cp $W/bcs/state.json $OUT/bcs_state.json 2>/dev/null; cp $W/lift/state.json $OUT/lift_state.json 2>/dev/null
  tail -n 200 $W/lift/put_the_banana_in_the_bowl/ppo_k1/metrics.jsonl > $OUT/metrics_tail.jsonl 2>/dev/null
  collect_logs; }
