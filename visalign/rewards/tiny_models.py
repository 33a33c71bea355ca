"""Random-weight reward models of the published architectures written to disk in their published formats, for
tests (toy widths, the defaults) and throughput benchmarks (published sizes, via the ``config`` arguments)."""
from __future__ import annotations

from pathlib import Path

import torch

CLIP_BOS, CLIP_EOS = 512, 513


def save_clip_tokenizer(folder: Path) -> None:
    """A byte-level CLIP tokenizer with no merges (every character a token); offline."""
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers import CLIPTokenizer

    chars = sorted(ByteLevel.alphabet())
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    vocab.update({"<|startoftext|>": CLIP_BOS, "<|endoftext|>": CLIP_EOS})
    CLIPTokenizer(vocab=vocab, merges=[]).save_pretrained(str(folder))


TINY_CLIP = dict(
    text_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                     max_position_embeddings=77, hidden_act="gelu"),
    vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                       image_size=32, patch_size=8, hidden_act="gelu"),
    projection_dim=16,
)


def save_tiny_hf_clip(folder: Path, arch: dict | None = None, seed: int = 0) -> Path:
    """A transformers ``CLIPModel`` folder (safetensors + byte-level tokenizer); ``arch`` defaults to a toy width."""
    from transformers import CLIPConfig, CLIPModel

    torch.manual_seed(seed)
    arch = arch or TINY_CLIP
    text = {**arch["text_config"], "vocab_size": CLIP_EOS + 1, "bos_token_id": CLIP_BOS, "eos_token_id": CLIP_EOS,
            "pad_token_id": CLIP_EOS}
    CLIPModel(CLIPConfig(**{**arch, "text_config": text})).save_pretrained(str(folder))
    save_clip_tokenizer(folder)
    return folder


BERT_WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "red", "blue", "circle", "square", "cat", "on",
              "the", "sign", "says"] + [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"] + list("bcdefghijklmnopqrstuvwxyz")


def save_bert_tokenizer(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(BERT_WORDS) + "\n")
    return folder


TINY_BLIP_VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                        image_size=32, patch_size=16)
TINY_BLIP_TEXT = dict(vocab_size=len(BERT_WORDS) + 2, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, max_position_embeddings=40)

def tiny_image_reward_checkpoint(seed: int = 0, vision: dict | None = TINY_BLIP_VISION,
                                 text: dict | None = TINY_BLIP_TEXT) -> dict[str, torch.Tensor]:
    """Random weights in the *published* ImageReward.pt key layout (BLIP names, plus the unused projections and
    position-id buffer that the real file carries); ``vision=text=None`` gives the published size."""
    from .image_reward import ImageRewardModel, PUBLISHED_TEXT, PUBLISHED_VISION, to_published_layout

    torch.manual_seed(seed)
    model = ImageRewardModel(vision, text)
    out = {k: v + 0.02 * torch.randn_like(v) for k, v in to_published_layout(model.state_dict()).items()}
    vision, text = vision or PUBLISHED_VISION, text or PUBLISHED_TEXT
    out["blip.text_encoder.embeddings.position_ids"] = torch.arange(text["max_position_embeddings"])[None]
    out["blip.vision_proj.weight"] = torch.randn(8, vision["hidden_size"])
    out["blip.text_proj.weight"] = torch.randn(8, text["hidden_size"])
    return out


VLM_WORDS = ["<pad>", "<unk>", "<s>", "</s>", "<image>", "USER:", "ASSISTANT:", "Yes", "No", "yes", "no", "Does", "this",
             "image", "show", "a", "red", "circle", "blue", "square", "?", "Answer", "or", ".", "Is", "it", "true",
             "that", "is", "left", "of", "the", "1", "2", "3", "4", "5", "Rate", "from", "to"]
VLM_CHAT_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'user' %}USER: {% for c in m['content'] %}{% if c['type'] == 'image' %}"
    "<image> {% else %}{{ c['text'] }} {% endif %}{% endfor %}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)


TINY_LLAVA = dict(
    vision_config=dict(model_type="clip_vision_model", hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=2, image_size=32, patch_size=16),
    text_config=dict(model_type="llama", hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                     num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128),
)


def save_tiny_llava(folder: Path, arch: dict | None = None, seed: int = 0) -> Path:
    """A LLaVA folder (CLIP vision tower + Llama, word-level tokenizer with a chat template); ``arch`` defaults to
    a toy width."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import CLIPImageProcessorPil, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor, PreTrainedTokenizerFast

    torch.manual_seed(seed)
    backend = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(VLM_WORDS)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.add_special_tokens(["<pad>", "<unk>", "<s>", "</s>", "<image>"])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>", bos_token="<s>",
                                        eos_token="</s>", extra_special_tokens={"image_token": "<image>"})
    arch = arch or TINY_LLAVA
    size, patch = arch["vision_config"]["image_size"], arch["vision_config"]["patch_size"]
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessorPil(size={"shortest_edge": size}, crop_size={"height": size, "width": size}),
        tokenizer=tokenizer, patch_size=patch, num_additional_image_tokens=1, vision_feature_select_strategy="default",
        chat_template=VLM_CHAT_TEMPLATE)
    text = {**arch["text_config"], "vocab_size": len(VLM_WORDS), "pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 3}
    config = LlavaConfig(vision_config=arch["vision_config"], text_config=text, image_token_index=4,
                         vision_feature_select_strategy="default", vision_feature_layer=-1)
    LlavaForConditionalGeneration(config).save_pretrained(str(folder))
    processor.save_pretrained(str(folder))
    return folder


def tiny_open_clip(folder: Path, name: str, config: dict, seed: int = 0) -> tuple[Path, torch.nn.Module]:
    """An open_clip model JSON ``folder/name.json`` (registered with open_clip) and a random model of it."""
    import json

    from .clip import import_open_clip

    open_clip = import_open_clip()
    path = folder / f"{name}.json"
    path.write_text(json.dumps(config))
    open_clip.add_model_config(path)
    torch.manual_seed(seed)
    return path, open_clip.create_model(name, pretrained=None)
