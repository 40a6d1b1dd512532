"""FlowVLA on synthetic batches (no env): config validation, the policy contract, save/load, pretrained paths."""

import json

import pytest
import torch

from rl.data.batches import Augment, AugmentConfig, chunk_indices
from rl.policies import flow_matching as fm
from rl.policies.base import ActionQueue, Policy, env_to_batch
from rl.policies.configuration_flow_vla import FlowVLAConfig, TextConfig, VisionConfig, resolve
from rl.policies.modeling_flow_vla import FlowVLA, load_policy
from rl.policies.text import WordTokenizer, build_vocab
from scenegen.errors import ConfigError

A, D, S = 5, 17, 32
TASKS = ["put the banana in the bowl", "place the apple on the plate"]


def stats(cams=("front",)):
    out = {"observation.state": {"mean": [0.1] * D, "std": [0.5] * D},
           "action": {"mean": [0.0] * A, "std": [0.4] * A}}
    for c in cams:
        out[f"observation.images.{c}"] = {"mean": [[[0.5]], [[0.4]], [[0.3]]], "std": [[[0.2]], [[0.2]], [[0.2]]]}
    return out


def tiny(cams=("front",), **kw):
    kw.setdefault("vision", VisionConfig(channels=(8, 16), grid=2))
    base = FlowVLAConfig(d_model=32, heads=4, obs_layers=1, expert_layers=1, chunk_size=6, n_action_steps=3, **kw)
    return resolve(base, action_dim=A, state_dim=D, cameras=cams, robot_type="panda", tasks=TASKS)


def batch(b=4, cams=("front",), seed=0, with_action=True):
    g = torch.Generator().manual_seed(seed)
    out = {"observation.state": torch.randn(b, D, generator=g), "task": [TASKS[i % 2] for i in range(b)]}
    for c in cams:
        out[f"observation.images.{c}"] = torch.rand(b, 3, S, S, generator=g)
    if with_action:
        out["action"] = torch.rand(b, 6, A, generator=g) * 2 - 1
        out["action_is_pad"] = torch.zeros(b, 6, dtype=torch.bool)
        out["action_is_pad"][0, 4:] = True
    return out


def test_config_validation_names_the_field():
    with pytest.raises(ConfigError, match="n_action_steps"):
        FlowVLAConfig(chunk_size=4, n_action_steps=5)
    with pytest.raises(ConfigError, match="backbone"):
        VisionConfig(backbone="resnet")
    with pytest.raises(ConfigError, match="needs pretrained"):
        VisionConfig(backbone="hf")
    with pytest.raises(ConfigError, match="multiple of heads"):
        FlowVLAConfig(d_model=30, heads=4)
    with pytest.raises(ConfigError, match="resolved"):
        FlowVLA(FlowVLAConfig(), stats())
    with pytest.raises(ConfigError, match="dataset's is 5"):
        resolve(FlowVLAConfig(action_dim=7), action_dim=5, state_dim=D, cameras=(), robot_type="panda", tasks=[])
    with pytest.raises(ConfigError, match="not in the dataset"):
        resolve(FlowVLAConfig(cameras=("wrist",)), action_dim=5, state_dim=D, cameras=("front",),
                robot_type="panda", tasks=[])
    cfg = tiny()
    assert FlowVLAConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg


def test_vocabulary_covers_catalog_and_tasks():
    vocab = build_vocab(["put the zorblax in the bowl"])
    assert vocab[:2] == ["<pad>", "<unk>"] and {"banana", "bowl", "zorblax", "put"} <= set(vocab)
    ids, mask = WordTokenizer(vocab, 4)(["Put the banana in the bowl", "qqq"])
    assert ids.shape == (2, 4) and mask[0].all() and mask[1].tolist() == [True, False, False, False]
    assert ids[1, 0] == 1  # unknown word


def test_forward_backward_and_contract():
    torch.manual_seed(0)
    policy = FlowVLA(tiny(), stats())
    assert isinstance(policy, Policy)
    loss, metrics = policy(batch())
    assert loss.ndim == 0 and torch.isfinite(loss) and metrics["loss"] == pytest.approx(float(loss.detach()))
    loss.backward()
    assert all(p.grad is not None for p in policy.expert.parameters())
    obs = batch(2, with_action=False)
    chunk = policy.predict_action_chunk(obs, generator=torch.Generator().manual_seed(1))
    assert chunk.shape == (2, 6, A) and chunk.min() >= -1 and chunk.max() <= 1
    # select_action drains n_action_steps=3 actions of one chunk before predicting the next
    calls = []
    real = policy.predict_action_chunk
    policy.predict_action_chunk = lambda o, **k: calls.append(1) or real(o, **k)
    policy.reset()
    acts = [policy.select_action(obs) for _ in range(7)]
    assert len(calls) == 3 and acts[0].shape == (2, A)
    policy.reset()
    policy.select_action(obs)
    assert len(calls) == 4


def test_embedding_and_velocity_reproduce_the_chunk():
    """PPOFlow's view: integrating velocity(x, t, embed(obs)) from the same noise gives predict_action_chunk."""
    torch.manual_seed(0)
    policy = FlowVLA(tiny(), stats()).eval()
    obs = batch(3, with_action=False)
    emb = policy.embed(obs)
    assert emb.pooled.shape == (3, 32) and emb.tokens.shape[0] == 3 and emb.mask.dtype == torch.bool
    noise = policy.sample_noise(3, torch.Generator().manual_seed(5))
    with torch.no_grad():
        x = fm.integrate(lambda x, t: policy.velocity(x, t, emb), noise, 4)
    want = policy.predict_action_chunk(obs, noise=noise, num_steps=4)
    torch.testing.assert_close(policy.unnormalize_chunk(x), want)
    one = policy.predict_action_chunk(obs, noise=noise, num_steps=1)
    assert not torch.allclose(one, want)  # K is an inference setting of the same weights


def test_save_load_round_trip_gives_identical_actions(tmp_path):
    torch.manual_seed(0)
    policy = FlowVLA(tiny(cams=("front", "wrist")), stats(("front", "wrist"))).eval()
    policy.save(tmp_path / "ckpt", {"dataset_hash": "abc", "env_config": {"image_size": S}})
    back = load_policy(tmp_path / "ckpt")
    obs = batch(2, cams=("front", "wrist"), with_action=False)
    noise = policy.sample_noise(2, torch.Generator().manual_seed(3))
    want = policy.predict_action_chunk(obs, noise=noise)
    torch.testing.assert_close(back.predict_action_chunk(obs, noise=noise), want, rtol=0, atol=0)
    prov = json.loads((tmp_path / "ckpt" / "provenance.json").read_text())
    assert prov["dataset_hash"] == "abc" and "git_commit" in prov and back.config == policy.config


def test_bad_checkpoints_get_one_line_errors(tmp_path):
    with pytest.raises(ConfigError, match="no policy checkpoint"):
        load_policy(tmp_path)
    torch.manual_seed(0)
    FlowVLA(tiny(), stats()).save(tmp_path / "a")
    head = json.loads((tmp_path / "a" / "config.json").read_text())
    head["config"]["d_model"] = 64
    (tmp_path / "a" / "config.json").write_text(json.dumps(head))
    with pytest.raises(ConfigError, match="do not match the config") as e:
        load_policy(tmp_path / "a")
    assert "\n" not in str(e.value)


def test_env_observations_become_batches():
    import numpy as np

    obs = {"front": np.zeros((S, S, 3), np.uint8), "proprio": np.ones(D, np.float32), "instruction": "put it"}
    b = env_to_batch(obs, ("front",))
    assert b["observation.images.front"].shape == (1, 3, S, S) and b["task"] == ["put it"]
    with pytest.raises(ConfigError, match="wrist"):
        env_to_batch(obs, ("wrist",))
    q = ActionQueue(2)
    q.push(torch.arange(12.0).reshape(1, 4, 3))
    assert len(q) == 2 and q.pop().tolist() == [[0.0, 1.0, 2.0]]


def test_chunks_pad_at_episode_end():
    end = torch.tensor([3, 3, 3, 5, 5])
    rows, pad = chunk_indices(torch.tensor([1, 3]), end, 4)
    assert rows.tolist() == [[1, 2, 2, 2], [3, 4, 4, 4]]
    assert pad.tolist() == [[False, False, True, True], [False, False, True, True]]


def test_augmentation():
    g = torch.Generator().manual_seed(0)
    img = torch.rand(4, 3, 20, 20, generator=g)
    same = Augment(AugmentConfig(shift=0, brightness=0, contrast=0, saturation=0))(img)
    torch.testing.assert_close(same, img)
    aug = Augment(AugmentConfig())
    a = aug(img, torch.Generator().manual_seed(1))
    b = aug(img, torch.Generator().manual_seed(1))
    assert a.shape == img.shape and torch.equal(a, b) and not torch.allclose(a, img)
    assert a.min() >= 0 and a.max() <= 1
    shifted = Augment(AugmentConfig(shift=0.2, brightness=0, contrast=0, saturation=0))(img, g)
    # a pure shift keeps pixel values: every output value is one of the input's
    assert torch.isin(shifted[0], img[0]).all()


def _tiny_hf(tmp_path):
    from transformers import BertConfig, BertModel, BertTokenizer, ViTConfig, ViTModel

    vit = tmp_path / "vit"
    ViTModel(ViTConfig(image_size=16, patch_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                       intermediate_size=32), add_pooling_layer=False).save_pretrained(vit)
    bert = tmp_path / "bert"
    bert.mkdir()
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "put", "the", "banana", "in", "bowl", "place", "apple",
             "on", "plate"]
    (bert / "vocab.txt").write_text("\n".join(words) + "\n")
    BertTokenizer(str(bert / "vocab.txt")).save_pretrained(bert)
    BertModel(BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32), add_pooling_layer=False).save_pretrained(bert)
    return vit, bert


def test_pretrained_backbones_load_from_local_folders(tmp_path):
    pytest.importorskip("transformers")
    vit, bert = _tiny_hf(tmp_path)
    torch.manual_seed(0)
    cfg = tiny(vision=VisionConfig(backbone="hf", pretrained=str(vit), grid=2, freeze=True),
               text=TextConfig(encoder="hf", pretrained=str(bert)))
    policy = FlowVLA(cfg, stats()).eval()
    from transformers import ViTModel

    ref = ViTModel.from_pretrained(vit, add_pooling_layer=False).state_dict()
    got = policy.vision["front"].backbone.state_dict()
    common = [k for k in ref if k in got and "layer" in k]
    assert common and all(torch.equal(got[k], ref[k]) for k in common)  # the saved weights were read
    loss, _ = policy(batch())
    assert torch.isfinite(loss)
    policy.save(tmp_path / "ckpt")
    back = load_policy(tmp_path / "ckpt")  # the backbone's architecture travels with the checkpoint
    obs = batch(2, with_action=False)
    noise = policy.sample_noise(2, torch.Generator().manual_seed(0))
    want = policy.predict_action_chunk(obs, noise=noise)
    torch.testing.assert_close(back.predict_action_chunk(obs, noise=noise), want)


def test_missing_pretrained_weights_say_how_to_supply_them(tmp_path):
    cfg = tiny(vision=VisionConfig(backbone="hf", pretrained=str(tmp_path / "nowhere")))
    with pytest.raises(ConfigError, match="does not exist; download it"):
        FlowVLA(cfg, stats())
    (tmp_path / "empty").mkdir()
    cfg = tiny(text=TextConfig(encoder="hf", pretrained=str(tmp_path / "empty")))
    with pytest.raises(ConfigError, match="no config.json"):
        FlowVLA(cfg, stats())


def test_backbone_weights_load_from_a_local_file(tmp_path):
    from safetensors.torch import save_file

    from rl.policies.vision import load_weights

    src, dst = torch.nn.Conv2d(3, 4, 3), torch.nn.Conv2d(3, 4, 3)
    save_file({**src.state_dict(), "head.weight": torch.zeros(2, 2)}, str(tmp_path / "model.safetensors"))
    load_weights(dst, tmp_path / "model.safetensors")  # the classifier head in the file is dropped
    assert all(torch.equal(a, b) for a, b in zip(src.state_dict().values(), dst.state_dict().values(), strict=True))
    torch.save({"weight": src.weight.detach()}, tmp_path / "partial.bin")
    with pytest.raises(ValueError, match="1 weights missing"):
        load_weights(dst, tmp_path / "partial.bin")
    torch.save({"weight": torch.zeros(4, 3, 5, 5), "bias": src.bias.detach()}, tmp_path / "shape.bin")
    with pytest.raises(ValueError, match="1 of another shape"):
        load_weights(dst, tmp_path / "shape.bin")


def test_timm_models_take_the_configured_image_size():
    """A ViT asked for another image side is built with ``dynamic_img_size``; a conv net without the option as is."""
    from rl.policies.vision import create_timm

    calls = []

    class FakeTimm:
        @staticmethod
        def create_model(arch, pretrained, num_classes, **kw):
            calls.append((arch, pretrained, num_classes, kw))
            if kw and arch.startswith("resnet"):
                raise TypeError("ResNet.__init__() got an unexpected keyword argument 'dynamic_img_size'")
            return torch.nn.Identity()

    create_timm(FakeTimm, "vit_tiny_patch16_224", False, 64)
    create_timm(FakeTimm, "resnet18", True, 64)
    create_timm(FakeTimm, "vit_tiny_patch16_224", False, None)
    assert calls == [("vit_tiny_patch16_224", False, 0, {"dynamic_img_size": True}),
                     ("resnet18", True, 0, {"dynamic_img_size": True}), ("resnet18", True, 0, {}),
                     ("vit_tiny_patch16_224", False, 0, {})]
