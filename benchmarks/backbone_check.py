"""Pretrained image backbones in FlowVLA where timm is installed (the GPU machine): load, train, save, reload.

timm needs torchvision, which would replace this machine's pinned torch, so the timm path is checked
on the GPU machine (Python 3.12, torch 2.11, timm and torchvision in its image)::

    python benchmarks/backbone_check.py --out benchmarks/backbone_check.json --device cuda

For each timm architecture (no network: random weights are written to a local folder as a hub snapshot
would be, ``config.json`` + ``model.safetensors``, and read back through ``VisionConfig(backbone="timm",
pretrained=FOLDER)``) it checks that:

1. the policy's backbone holds exactly the weights in the file;
2. a few BC gradient steps on a fixed synthetic batch lower the flow-matching loss;
3. ``save`` / ``FlowVLA.load`` gives identical actions from the same noise;
4. a folder without weights gives the one-line error that says how to supply them.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

A, D, S = 7, 17, 64
TASKS = ["put the banana in the bowl", "place the apple on the plate"]


def _stats(cams: tuple[str, ...]) -> dict:
    out = {"observation.state": {"mean": [0.0] * D, "std": [1.0] * D},
           "action": {"mean": [0.0] * A, "std": [0.5] * A}}
    for c in cams:
        out[f"observation.images.{c}"] = {"mean": [[[0.5]], [[0.5]], [[0.5]]], "std": [[[0.25]], [[0.25]], [[0.25]]]}
    return out


def check(arch: str, device: str, root: Path) -> dict:
    """Every check for one timm architecture; a dict of findings (``ok`` when all hold)."""
    import timm
    import torch
    from safetensors.torch import save_file

    from rl.policies.configuration_flow_vla import FlowVLAConfig, VisionConfig, resolve
    from rl.policies.modeling_flow_vla import FlowVLA
    from scenegen.errors import ConfigError

    folder = root / arch
    folder.mkdir(parents=True)
    torch.manual_seed(0)
    ref = timm.create_model(arch, pretrained=False, num_classes=0)
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({"architecture": arch}))
    cams = ("front", "wrist")
    base = FlowVLAConfig(d_model=64, heads=4, obs_layers=1, expert_layers=2, chunk_size=8, n_action_steps=4,
                         vision=VisionConfig(backbone="timm", pretrained=str(folder), grid=2, input_size=S))
    cfg = resolve(base, action_dim=A, state_dim=D, cameras=cams, robot_type="panda", tasks=TASKS)
    model = FlowVLA(cfg, _stats(cams)).to(device)
    out: dict = {"architecture": arch, "parameters": sum(p.numel() for p in model.parameters())}
    enc = next(m for m in model.modules() if hasattr(m, "backbone"))
    loaded = enc.backbone.state_dict()
    out["weights_match_file"] = all(torch.equal(loaded[k].cpu(), v) for k, v in ref.state_dict().items())

    g = torch.Generator().manual_seed(0)
    batch = {"observation.state": torch.randn(8, D, generator=g).to(device), "task": [TASKS[i % 2] for i in range(8)],
             "action": (torch.rand(8, 8, A, generator=g) * 2 - 1).to(device),
             "action_is_pad": torch.zeros(8, 8, dtype=torch.bool, device=device),
             **{f"observation.images.{c}": torch.rand(8, 3, S, S, generator=g).to(device) for c in cams}}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    losses, t = [], time.perf_counter()
    for step in range(60):  # the same few noise/time draws again and again: a loss that can fall
        loss, _ = model.forward(batch, generator=torch.Generator(device=device).manual_seed(step % 4))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    out["train_seconds"] = round(time.perf_counter() - t, 2)
    out["loss_first4"], out["loss_last4"] = sum(losses[:4]) / 4, sum(losses[-4:]) / 4
    out["loss_falls"] = out["loss_last4"] < 0.7 * out["loss_first4"]

    model.eval()
    obs = {k: v[:2] for k, v in batch.items() if k not in ("action", "action_is_pad")}
    obs["task"] = batch["task"][:2]
    model.save(folder / "ckpt")
    again = FlowVLA.load(folder / "ckpt", device=device).eval()
    noise = model.sample_noise(2, torch.Generator(device=device).manual_seed(7))
    with torch.no_grad():
        a1 = model.predict_action_chunk(obs, noise=noise)
        a2 = again.predict_action_chunk(obs, noise=noise)
    out["reload_max_abs_diff"] = float((a1 - a2).abs().max())
    out["reload_identical"] = out["reload_max_abs_diff"] == 0.0

    empty = root / f"{arch}-empty"
    empty.mkdir()
    try:
        FlowVLA(resolve(FlowVLAConfig(vision=VisionConfig(backbone="timm", pretrained=str(empty))), action_dim=A,
                        state_dim=D, cameras=cams, robot_type="panda", tasks=TASKS), _stats(cams))
        out["missing_weights_error"] = None
    except ConfigError as exc:
        out["missing_weights_error"] = str(exc)
    out["ok"] = bool(out["weights_match_file"] and out["loss_falls"] and out["reload_identical"]
                     and out["missing_weights_error"] and "\n" not in out["missing_weights_error"])
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=str(Path(__file__).with_name("backbone_check.json")))
    p.add_argument("--device", default="cuda")
    p.add_argument("--archs", nargs="+", default=["resnet18", "vit_tiny_patch16_224", "convnext_atto"])
    a = p.parse_args()
    import timm
    import torch

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for arch in a.archs:
            try:
                rows.append(check(arch, a.device, Path(tmp)))
            except Exception as exc:  # noqa: BLE001 -- one architecture's failure is a finding, not the end
                rows.append({"architecture": arch, "ok": False, "error": f"{type(exc).__name__}: {exc}"})
            print(json.dumps(rows[-1]), flush=True)
    report = {"benchmark": "backbone_check", "date": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.node(),
              "python": platform.python_version(), "torch": torch.__version__, "timm": timm.__version__,
              "device": a.device, "results": rows, "all_ok": all(r["ok"] for r in rows)}
    Path(a.out).write_text(json.dumps(report, indent=1))
    print(f"all_ok={report['all_ok']} -> {a.out}", flush=True)


if __name__ == "__main__":
    main()
