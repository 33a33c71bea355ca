"""``visalign bench rewards``: CPU throughput of each model reward at its published architecture size.

Weights are random (throughput does not depend on their values) but go through the real path: each model is
built from its published config, saved to a temporary folder in its published format, loaded by the reward
from there, warmed up on one image, then timed scoring ``--images`` 256×256 images (resized by the reward's own
preprocessing) with no gradient. ``--tiny`` uses the test-size models instead (a smoke run).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import torch

from ..rewards.tiny_models import (TINY_BLIP_TEXT, TINY_BLIP_VISION, TINY_CLIP, save_bert_tokenizer, save_tiny_hf_clip,
                                   save_tiny_llava, tiny_image_reward_checkpoint)

CLIP_VIT_H14 = dict(  # laion CLIP-ViT-H-14 (PickScore's backbone)
    text_config=dict(hidden_size=1024, intermediate_size=4096, num_hidden_layers=24, num_attention_heads=16,
                     max_position_embeddings=77, hidden_act="gelu"),
    vision_config=dict(hidden_size=1280, intermediate_size=5120, num_hidden_layers=32, num_attention_heads=16,
                       image_size=224, patch_size=14, hidden_act="gelu"),
    projection_dim=1024,
)
CLIP_VIT_L14 = dict(  # openai/clip-vit-large-patch14 (the aesthetic predictor's backbone)
    text_config=dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                     max_position_embeddings=77, hidden_act="quick_gelu"),
    vision_config=dict(hidden_size=1024, intermediate_size=4096, num_hidden_layers=24, num_attention_heads=16,
                       image_size=224, patch_size=14, hidden_act="quick_gelu"),
    projection_dim=768,
)
SMALL_LLAVA = dict(  # CLIP ViT-B/16 tower + a SmolLM-135M-shaped Llama: the smallest realistic local judge
    vision_config=dict(model_type="clip_vision_model", hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                       num_attention_heads=12, image_size=224, patch_size=16),
    text_config=dict(model_type="llama", hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                     num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=2048),
)


def _pickscore(tmp: Path, tiny: bool) -> tuple[dict[str, Any], str]:
    folder = save_tiny_hf_clip(tmp / "pick", None if tiny else CLIP_VIT_H14)
    return {"name": "pickscore", "path": str(folder)}, "CLIP ViT-H/14 (transformers)"


def _clip_score(tmp: Path, tiny: bool) -> tuple[dict[str, Any], str]:
    folder = save_tiny_hf_clip(tmp / "clip", None if tiny else CLIP_VIT_L14)
    return {"name": "clip_score", "backend": "transformers", "path": str(folder)}, "CLIP ViT-L/14 (transformers)"


def _aesthetic(tmp: Path, tiny: bool) -> tuple[dict[str, Any], str]:
    from safetensors.torch import save_file

    from ..rewards.aesthetic import AestheticMLP

    folder = save_tiny_hf_clip(tmp / "clip", None if tiny else CLIP_VIT_L14)
    width = (TINY_CLIP if tiny else CLIP_VIT_L14)["projection_dim"]
    save_file(AestheticMLP(width).state_dict(), str(tmp / "head.safetensors"))
    return {"name": "aesthetic", "path": str(tmp / "head.safetensors"), "clip_path": str(folder)}, "CLIP ViT-L/14 + MLP"


def _image_reward(tmp: Path, tiny: bool) -> tuple[dict[str, Any], str]:
    from safetensors.torch import save_file

    sizes = (TINY_BLIP_VISION, TINY_BLIP_TEXT) if tiny else (None, None)
    state = tiny_image_reward_checkpoint(0, *sizes)
    save_file({k: v.contiguous() for k, v in state.items()}, str(tmp / "ImageReward.safetensors"))
    spec = {"name": "image_reward", "path": str(tmp / "ImageReward.safetensors"),
            "tokenizer_path": str(save_bert_tokenizer(tmp / "bert"))}
    if tiny:
        spec.update(vision=TINY_BLIP_VISION, text=TINY_BLIP_TEXT)
    return spec, "BLIP ViT-L/16 + BERT-base (cross-attn) + MLP"


def _vlm_judge(tmp: Path, tiny: bool) -> tuple[dict[str, Any], str]:
    return ({"name": "vlm_judge", "path": str(save_tiny_llava(tmp / "llava", None if tiny else SMALL_LLAVA))},
            "LLaVA: CLIP ViT-B/16 + 135M Llama, 1 question")


def _hpsv2(tmp: Path, tiny: bool) -> tuple[dict[str, Any], str]:
    from ..rewards.clip import import_open_clip

    arch = "ViT-B-32" if tiny else "ViT-H-14"
    model = import_open_clip().create_model(arch, pretrained=None)
    torch.save({"state_dict": model.state_dict()}, str(tmp / "HPS_v2.1_compressed.pt"))
    return {"name": "hpsv2", "path": str(tmp / "HPS_v2.1_compressed.pt"), "model": arch}, f"open_clip {arch}"


def _remote(tmp: Path, tiny: bool) -> tuple[dict[str, Any], str]:
    from ..core.reward import build_reward
    from ..rewards.server import RewardServer

    server = RewardServer(build_reward("brightness"), port=0).start()  # a daemon thread; ends with the process
    return {"name": "remote", "url": server.url, "batch_size": 64}, "brightness behind serve-reward, 127.0.0.1 (wire cost)"


BUILDERS: dict[str, Callable[[Path, bool], tuple[dict[str, Any], str]]] = {
    "pickscore": _pickscore, "hpsv2": _hpsv2, "image_reward": _image_reward, "aesthetic": _aesthetic,
    "clip_score": _clip_score, "vlm_judge": _vlm_judge, "remote": _remote,
}


def run(args: argparse.Namespace) -> int:
    from ..core.reward import build_reward

    if args.threads:
        torch.set_num_threads(args.threads)
    names = args.only or list(BUILDERS)
    unknown = sorted(set(names) - set(BUILDERS))
    if unknown:
        raise SystemExit(f"unknown reward(s) {unknown}; known: {sorted(BUILDERS)}")
    images = torch.rand(args.images, 3, 256, 256, generator=torch.Generator().manual_seed(0)) * 2 - 1
    prompts = ["a red circle on a white table"] * args.images
    print("(CLIP text towers carry a 514-token test vocabulary: 38 M (ViT-L) / 50 M (ViT-H) fewer parameters than "
          "published, same compute per image)")
    print(f"| reward | architecture | params | images/s (CPU, {torch.get_num_threads()} threads, 256 px in) |")
    print("|---|---|---|---|")
    for name in names:
        with tempfile.TemporaryDirectory() as folder:
            try:
                spec, arch = BUILDERS[name](Path(folder), args.tiny)
            except ImportError as exc:
                print(f"| {name} | skipped: {exc} | | |")
                continue
            reward = build_reward(spec)
            modules = [m for m in vars(reward).values() if isinstance(m, torch.nn.Module)]
            if name in ("pickscore", "hpsv2", "clip_score", "aesthetic"):
                modules.append(reward.backend.model)
            params = sum(p.numel() for p in {id(p): p for m in modules for p in m.parameters()}.values())
            with torch.no_grad():
                reward(images[:1], prompts[:1], [{}])
                start = time.perf_counter()
                reward(images, prompts, [{}] * args.images)
                seconds = time.perf_counter() - start
            print(f"| {name} | {arch} | {params / 1e6:.0f} M | {args.images / seconds:.2f} |", flush=True)
            del reward
    return 0
