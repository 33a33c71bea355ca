"""Video and audio pictures for run folders: contact sheets (frames in a row per sample, captioned with prompt and
reward, the waveform under the frames for audio-video), animated GIFs (Pillow) and WAV files (stdlib ``wave``)."""
from __future__ import annotations

import math
import wave
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFont

CELL = 64  # frames are drawn at least this many pixels wide
GAP = 2
WAVE_HEIGHT = 56
DEFAULT_FPS = 8.0


def video_frames(video: torch.Tensor) -> np.ndarray:
    """``B×C×T×H×W`` in [-1, 1] -> uint8 ``B×T×H×W×3`` (grey for one channel, the first three of more)."""
    if not isinstance(video, torch.Tensor) or video.dim() != 5:
        shape = tuple(video.shape) if isinstance(video, torch.Tensor) else type(video).__name__
        raise ValueError(f"video pictures need B×C×T×H×W, got {shape}")
    x = ((video.detach().float().cpu().clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)
    if x.shape[1] == 1:
        x = x.expand(-1, 3, -1, -1, -1)
    return x[:, :3].permute(0, 2, 3, 4, 1).numpy()


def _font(size: int = 12) -> ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has one bitmap size
        return ImageFont.load_default()


def _caption(prompt: str | None, reward: float | None) -> str:
    parts = [prompt or ""] + ([f"reward {reward:.3f}"] if reward is not None else [])
    return "  |  ".join(p for p in parts if p)


def draw_waveform(draw: ImageDraw.ImageDraw, audio: np.ndarray, box: tuple[int, int, int, int], frames: int) -> None:
    """Min/max envelope of mono ``audio`` (in [-1, 1]) per pixel column inside ``box``, with frame boundaries."""
    x0, y0, x1, y1 = box
    width, mid, half = x1 - x0, (y0 + y1) / 2, (y1 - y0) / 2 - 1
    draw.rectangle(box, fill=(245, 245, 245))
    for k in range(1, frames):
        x = x0 + round(k * width / frames)
        draw.line([(x, y0), (x, y1)], fill=(200, 200, 200))
    draw.line([(x0, mid), (x1 - 1, mid)], fill=(180, 180, 180))
    columns = np.array_split(np.clip(audio, -1, 1), width)
    for i, col in enumerate(columns):
        if col.size:
            draw.line([(x0 + i, mid - col.max() * half), (x0 + i, mid - col.min() * half)], fill=(30, 80, 200))


def wrap_caption(text: str, font: ImageFont.ImageFont, width: int, max_lines: int) -> list[str]:
    """``text`` broken into lines no wider than ``width`` pixels; past ``max_lines`` the last line ends in "…"."""
    lines: list[str] = []
    for word in text.split():
        if lines and font.getlength(f"{lines[-1]} {word}") <= width:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        while lines[-1] and font.getlength(lines[-1] + " …") > width:
            lines[-1] = lines[-1][:-1]
        lines[-1] += " …"
    return lines


def captioned_grid(images: Sequence[np.ndarray], prompts: Sequence[str] | None = None,
                   rewards: Sequence[float] | None = None, cols: int | None = None, tile: int = 160,
                   max_lines: int = 5) -> Image.Image:
    """Image grid with each image's prompt and reward written under it (images upscaled, nearest, to ``tile`` px
    wide; long prompts wrap and end in "…" after ``max_lines`` lines; 4 images per row, up to 8 for large grids)."""
    cols = cols or min(len(images), max(4, min(8, math.ceil(math.sqrt(len(images))))))  # 4 per row, up to 8 for many
    rows = -(-len(images) // cols)
    font, pad = _font(10), 6
    line_h = 12
    h, w = images[0].shape[:2]
    scale = max(1, tile // w)
    cell_w, cell_h = w * scale, h * scale
    captions = [wrap_caption(_caption(prompts[i] if prompts else None,
                                      float(rewards[i]) if rewards is not None else None), font, cell_w, max_lines)
                for i in range(len(images))]
    text_h = line_h * max((len(c) for c in captions), default=0) + pad
    sheet = Image.new("RGB", (cols * (cell_w + pad) + pad, rows * (cell_h + text_h + 2 * pad) + pad), "white")
    draw = ImageDraw.Draw(sheet)
    for i, (image, caption) in enumerate(zip(images, captions)):
        x = pad + (i % cols) * (cell_w + pad)
        y = pad + (i // cols) * (cell_h + text_h + 2 * pad)
        sheet.paste(Image.fromarray(image).resize((cell_w, cell_h), Image.NEAREST), (x, y))
        for k, line in enumerate(caption):
            draw.text((x, y + cell_h + pad + k * line_h), line, fill="black", font=font)
    return sheet


def contact_sheet(video: torch.Tensor, path: Path, prompts: Sequence[str] | None = None,
                  rewards: Sequence[float] | None = None, audio: torch.Tensor | None = None) -> Path:
    """One row per sample: its caption (prompt + reward), its T frames side by side, and (with ``audio``
    ``B×C×L``) the waveform under the frames, time-aligned with them."""
    frames = video_frames(video)
    b, t, h, w, _ = frames.shape
    scale = max(1, -(-CELL // w))
    fw, fh = w * scale, h * scale
    font = _font()
    caption_h = 16
    wave_h = WAVE_HEIGHT + GAP if audio is not None else 0
    row_h = caption_h + fh + wave_h + 3 * GAP
    width = t * (fw + GAP) + GAP
    sheet = Image.new("RGB", (max(width, 320), b * row_h + GAP), "white")
    draw = ImageDraw.Draw(sheet)
    mono = audio.detach().float().cpu().mean(1).numpy() if audio is not None else None
    for i in range(b):
        y = i * row_h + GAP
        reward = float(rewards[i]) if rewards is not None else None
        draw.text((GAP, y), _caption(prompts[i] if prompts else None, reward), fill="black", font=font)
        y += caption_h
        for k in range(t):
            cell = Image.fromarray(frames[i, k]).resize((fw, fh), Image.NEAREST)
            sheet.paste(cell, (GAP + k * (fw + GAP), y))
        if mono is not None:
            draw_waveform(draw, mono[i], (GAP, y + fh + GAP, width - GAP, y + fh + GAP + WAVE_HEIGHT), t)
    path.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(path)
    return path


def animated_gif(video: torch.Tensor, path: Path, fps: float = DEFAULT_FPS, cols: int = 4) -> Path:
    """One GIF frame per video frame: the samples tiled ``cols`` wide, each scaled to at least ``CELL`` px."""
    frames = video_frames(video)
    b, t, h, w, _ = frames.shape
    scale = max(1, -(-CELL // w))
    cols = min(cols, b)
    rows = -(-b // cols)
    pictures = []
    for k in range(t):
        canvas = Image.new("RGB", (cols * (w * scale + GAP) + GAP, rows * (h * scale + GAP) + GAP), "white")
        for i in range(b):
            cell = Image.fromarray(frames[i, k]).resize((w * scale, h * scale), Image.NEAREST)
            canvas.paste(cell, (GAP + (i % cols) * (w * scale + GAP), GAP + (i // cols) * (h * scale + GAP)))
        pictures.append(canvas)
    path.parent.mkdir(parents=True, exist_ok=True)
    pictures[0].save(path, save_all=True, append_images=pictures[1:], duration=round(1000 / fps), loop=0,
                     disposal=1, optimize=False)
    return path


def write_wav(audio: torch.Tensor, sample_rate: int, path: Path) -> Path:
    """``C×L`` in [-1, 1] -> 16-bit PCM WAV with C channels."""
    if not isinstance(audio, torch.Tensor) or audio.dim() != 2:
        raise ValueError(f"write_wav needs one item's audio C×L, got {tuple(getattr(audio, 'shape', ()))}")
    pcm = (audio.detach().float().cpu().clamp(-1, 1) * 32767).round().to(torch.int16).T.contiguous().numpy()
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as f:
        f.setnchannels(audio.shape[0])
        f.setsampwidth(2)
        f.setframerate(int(sample_rate))
        f.writeframes(pcm.tobytes())
    return path


def save_video(video: torch.Tensor, path: Path, prompts: Sequence[str] | None = None,
               rewards: Sequence[float] | None = None, fps: float = DEFAULT_FPS) -> list[Path]:
    """Contact sheet ``path`` (PNG) and ``path`` with ``.gif``."""
    return [contact_sheet(video, path, prompts, rewards), animated_gif(video, path.with_suffix(".gif"), fps)]


def save_audio_video(samples: dict, path: Path, prompts: Sequence[str] | None = None,
                     rewards: Sequence[float] | None = None, max_wavs: int = 4) -> list[Path]:
    """Contact sheet with waveforms (PNG), GIF, and one WAV per sample for the first ``max_wavs`` (``path_<i>.wav``)."""
    video, audio = samples["video"], samples["audio"]
    out = [contact_sheet(video, path, prompts, rewards, audio=audio),
           animated_gif(video, path.with_suffix(".gif"), float(samples.get("fps", DEFAULT_FPS)))]
    for i in range(min(max_wavs, audio.shape[0])):
        out.append(write_wav(audio[i], int(samples["sample_rate"]), path.with_name(f"{path.stem}_{i}.wav")))
    return out


__all__ = ["contact_sheet", "animated_gif", "write_wav", "save_video", "save_audio_video", "video_frames", "draw_waveform"]
