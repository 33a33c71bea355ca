"""Tiny random-weight reward models of the published architectures, written to disk as users would have them."""
from __future__ import annotations

import re
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


def save_tiny_hf_clip(folder: Path, projection_dim: int = 16, image_size: int = 32, seed: int = 0) -> Path:
    """A transformers ``CLIPModel`` folder (safetensors + tokenizer) with the CLIP ViT layout at toy width."""
    from transformers import CLIPConfig, CLIPModel

    torch.manual_seed(seed)
    config = CLIPConfig(
        text_config=dict(vocab_size=CLIP_EOS + 1, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, max_position_embeddings=77, bos_token_id=CLIP_BOS,
                         eos_token_id=CLIP_EOS, pad_token_id=CLIP_EOS, hidden_act="gelu"),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                           image_size=image_size, patch_size=8, hidden_act="gelu"),
        projection_dim=projection_dim,
    )
    CLIPModel(config).save_pretrained(str(folder))
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

_TO_ORIGINAL = [
    (r"^vision\.embeddings\.class_embedding$", "blip.visual_encoder.cls_token"),
    (r"^vision\.embeddings\.position_embedding$", "blip.visual_encoder.pos_embed"),
    (r"^vision\.embeddings\.patch_embedding\.", "blip.visual_encoder.patch_embed.proj."),
    (r"^vision\.post_layernorm\.", "blip.visual_encoder.norm."),
    (r"^vision\.encoder\.layers\.(\d+)\.layer_norm1\.", r"blip.visual_encoder.blocks.\1.norm1."),
    (r"^vision\.encoder\.layers\.(\d+)\.layer_norm2\.", r"blip.visual_encoder.blocks.\1.norm2."),
    (r"^vision\.encoder\.layers\.(\d+)\.self_attn\.qkv\.", r"blip.visual_encoder.blocks.\1.attn.qkv."),
    (r"^vision\.encoder\.layers\.(\d+)\.self_attn\.projection\.", r"blip.visual_encoder.blocks.\1.attn.proj."),
    (r"^vision\.encoder\.layers\.(\d+)\.mlp\.", r"blip.visual_encoder.blocks.\1.mlp."),
    (r"^text\.", "blip.text_encoder."),
    (r"^head\.", "mlp."),
]


def tiny_image_reward_checkpoint(seed: int = 0) -> dict[str, torch.Tensor]:
    """Random weights in the *published* ImageReward.pt key layout (BLIP names, plus the unused projections and
    position-id buffer that the real file carries)."""
    from visalign.rewards.image_reward import ImageRewardModel

    torch.manual_seed(seed)
    model = ImageRewardModel(TINY_BLIP_VISION, TINY_BLIP_TEXT)
    out = {}
    for key, value in model.state_dict().items():
        for pattern, repl in _TO_ORIGINAL:
            if re.match(pattern, key):
                out[re.sub(pattern, repl, key)] = value.clone() + 0.02 * torch.randn_like(value)
                break
        else:
            raise AssertionError(f"no original name for {key}")
    out["blip.text_encoder.embeddings.position_ids"] = torch.arange(TINY_BLIP_TEXT["max_position_embeddings"])[None]
    out["blip.vision_proj.weight"] = torch.randn(8, TINY_BLIP_VISION["hidden_size"])
    out["blip.text_proj.weight"] = torch.randn(8, TINY_BLIP_TEXT["hidden_size"])
    return out


VLM_WORDS = ["<pad>", "<unk>", "<s>", "</s>", "<image>", "USER:", "ASSISTANT:", "Yes", "No", "yes", "no", "Does", "this",
             "image", "show", "a", "red", "circle", "blue", "square", "?", "Answer", "or", ".", "Is", "it", "true",
             "that", "is", "left", "of", "the", "1", "2", "3", "4", "5", "Rate", "from", "to"]
VLM_CHAT_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'user' %}USER: {% for c in m['content'] %}{% if c['type'] == 'image' %}"
    "<image> {% else %}{{ c['text'] }} {% endif %}{% endfor %}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)


def save_tiny_llava(folder: Path, seed: int = 0) -> Path:
    """A LLaVA folder (CLIP vision tower + Llama, word-level tokenizer with a chat template) at toy width."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import CLIPImageProcessorPil, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor, PreTrainedTokenizerFast

    torch.manual_seed(seed)
    backend = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(VLM_WORDS)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.add_special_tokens(["<pad>", "<unk>", "<s>", "</s>", "<image>"])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>", bos_token="<s>",
                                        eos_token="</s>", extra_special_tokens={"image_token": "<image>"})
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}),
        tokenizer=tokenizer, patch_size=16, num_additional_image_tokens=1, vision_feature_select_strategy="default",
        chat_template=VLM_CHAT_TEMPLATE)
    config = LlavaConfig(
        vision_config=dict(model_type="clip_vision_model", hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=2, image_size=32, patch_size=16),
        text_config=dict(model_type="llama", vocab_size=len(VLM_WORDS), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128,
                         pad_token_id=0, bos_token_id=2, eos_token_id=3),
        image_token_index=4, vision_feature_select_strategy="default", vision_feature_layer=-1)
    LlavaForConditionalGeneration(config).save_pretrained(str(folder))
    processor.save_pretrained(str(folder))
    return folder
