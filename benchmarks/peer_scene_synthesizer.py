"""The peer side of ``benchmarks/generate.py``: NVlabs scene_synthesizer making comparable tabletop scenes.

Runs in scene_synthesizer's own virtual environment (it imports nothing from scenegen):

    python3 -m venv /tmp/ssvenv && /tmp/ssvenv/bin/pip install scene-synthesizer==1.15.0
    /tmp/ssvenv/bin/python benchmarks/peer_scene_synthesizer.py -n 100

Each scene is what ``"put the banana in the bowl"`` makes in scenegen: a table, a bowl of random
size (its procedural ``BowlAsset``), a banana-sized capsule and one to three distractors (boxes
and cylinders), each placed on the table top by its collision-checked sampler. Prints one JSON
line: scenes, how many had every object placed, seconds, scenes per second.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def scene(rng: np.random.Generator):
    import scene_synthesizer as synth
    from scene_synthesizer import procedural_assets as pa

    s = synth.Scene(seed=int(rng.integers(1 << 30)))
    s.add_object(pa.TableAsset(1.2, 0.8, 0.75), "table")
    s.label_support("table_top", obj_ids=["table"])
    bottom = ("centroid", "centroid", "bottom")           # rest on the support, not half in it
    placed = [s.place_object("bowl", pa.BowlAsset(width=float(rng.uniform(0.12, 0.18)),
                                                  height=float(rng.uniform(0.05, 0.08)), origin=bottom),
                             support_id="table_top"),
              s.place_object("banana", synth.CapsuleAsset(radius=0.02, height=float(rng.uniform(0.12, 0.17)),
                                                          origin=bottom), support_id="table_top")]
    for i in range(int(rng.integers(1, 4))):
        if rng.random() < 0.5:
            a = synth.BoxAsset(extents=[float(x) for x in rng.uniform(0.04, 0.1, 3)], origin=bottom)
        else:
            a = synth.CylinderAsset(radius=float(rng.uniform(0.02, 0.04)), height=float(rng.uniform(0.05, 0.12)),
                                    origin=bottom)
        placed.append(s.place_object(f"distractor_{i}", a, support_id="table_top"))
    s.metadata["placed_all"] = all(placed)
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=100)
    args = ap.parse_args()
    import scene_synthesizer

    rng = np.random.default_rng(0)
    for _ in range(3):  # first-use costs (imports, caches), as scenegen's side is warm too
        scene(rng)
    t0 = time.perf_counter()
    complete = sum(bool(scene(rng).metadata["placed_all"]) for _ in range(args.n))
    secs = time.perf_counter() - t0
    version = getattr(scene_synthesizer, "__version__", "1.15.0")
    print(json.dumps({"tool": "scene_synthesizer", "version": version, "scenes": args.n, "complete": complete,
                      "seconds": round(secs, 2),
                      "scenes_per_s": round(args.n / secs, 2)}))


if __name__ == "__main__":
    main()
