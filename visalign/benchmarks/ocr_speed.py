"""``visalign bench ocr``: the OCR reward's speed and accuracy on rendered words (CPU, rapidocr-onnxruntime)."""
from __future__ import annotations

import argparse
import random
import time

import torch

WORDS = ["visalign", "HELLO", "open 24h", "STOP", "coffee", "Paris 1900", "reward", "sale 50%", "EXIT", "welcome"]


def run(args: argparse.Namespace) -> int:
    from ..rewards.ocr import OCRReward
    from ..rewards.text_render import render_text

    if args.threads:
        torch.set_num_threads(args.threads)
    rng = random.Random(0)
    words = [rng.choice(WORDS) for _ in range(args.images)]
    images = torch.stack([render_text(w, args.size) for w in words])
    prompts = [f'a sign that says "{w}"' for w in words]
    start = time.perf_counter()
    reward = OCRReward(threads=args.threads)
    load_s = time.perf_counter() - start
    reward(images[:1], prompts[:1], [{}])  # onnxruntime's first call builds its kernels
    start = time.perf_counter()
    right = reward(images, prompts, [{}] * len(words))
    seconds = time.perf_counter() - start
    shuffled = prompts[1:] + prompts[:1]
    wrong = reward(images, shuffled, [{}] * len(words))
    print(f"ocr reward, {args.images} images at {args.size}x{args.size}, rapidocr-onnxruntime (PP-OCRv4) on CPU, "
          f"threads={args.threads or 'default'}")
    print(f"  load {load_s:.2f} s; {seconds / args.images * 1000:.0f} ms/image; {args.images / seconds:.1f} images/s")
    print(f"  mean reward: matching prompts {right.mean():.3f}, shuffled prompts {wrong.mean():.3f}")
    return 0
