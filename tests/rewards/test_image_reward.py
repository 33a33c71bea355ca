"""ImageReward built from transformers BLIP classes computes the published scorer: checked against a plain-torch
re-implementation of BLIP's vit.py / med.py forward read straight off the published key layout."""
import math

import pytest
import torch
import torch.nn.functional as F

from visalign.core import build_reward, score
from visalign.rewards.image_reward import IMAGE_REWARD_MEAN, IMAGE_REWARD_STD, MAX_PROMPT_TOKENS, convert_image_reward_state
from visalign.rewards.pixels import published_pixels

from visalign.rewards.tiny_models import TINY_BLIP_TEXT, TINY_BLIP_VISION

PROMPTS = ["a red circle", "the sign says cat"]


def ref_vit(sd, x, heads, patch, depth):
    """BLIP VisionTransformer.forward: pre-norm blocks (eps 1e-6), qkv with bias, final norm."""
    p = "blip.visual_encoder."
    ln = lambda t, name: F.layer_norm(t, t.shape[-1:], sd[name + ".weight"], sd[name + ".bias"], 1e-6)
    lin = lambda t, name: F.linear(t, sd[name + ".weight"], sd[name + ".bias"])
    x = F.conv2d(x, sd[p + "patch_embed.proj.weight"], sd[p + "patch_embed.proj.bias"], stride=patch).flatten(2).transpose(1, 2)
    b, _, d = x.shape
    x = torch.cat([sd[p + "cls_token"].expand(b, -1, -1), x], 1)
    x = x + sd[p + "pos_embed"][:, : x.shape[1]]
    n = x.shape[1]
    for i in range(depth):
        blk = f"{p}blocks.{i}."
        q, k, v = lin(ln(x, blk + "norm1"), blk + "attn.qkv").reshape(b, n, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
        attn = ((q @ k.transpose(-2, -1)) * (d // heads) ** -0.5).softmax(-1)
        x = x + lin((attn @ v).transpose(1, 2).reshape(b, n, d), blk + "attn.proj")
        x = x + lin(F.gelu(lin(ln(x, blk + "norm2"), blk + "mlp.fc1")), blk + "mlp.fc2")
    return ln(x, p + "norm")


def ref_bert(sd, ids, mask, enc, heads, depth):
    """BLIP med.py BertModel in 'multimodal' mode: post-norm layers, self-attention then cross-attention."""
    p = "blip.text_encoder."
    ln = lambda t, name: F.layer_norm(t, t.shape[-1:], sd[name + ".weight"], sd[name + ".bias"], 1e-12)
    lin = lambda t, name: F.linear(t, sd[name + ".weight"], sd[name + ".bias"])

    def attention(h, ctx, name, additive):
        b, n, d = h.shape
        split = lambda t: t.view(b, -1, heads, d // heads).transpose(1, 2)
        q, k, v = split(lin(h, name + ".self.query")), split(lin(ctx, name + ".self.key")), split(lin(ctx, name + ".self.value"))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // heads) + additive
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d)
        return ln(lin(out, name + ".output.dense") + h, name + ".output.LayerNorm")

    h = sd[p + "embeddings.word_embeddings.weight"][ids] + sd[p + "embeddings.position_embeddings.weight"][: ids.shape[1]]
    h = ln(h, p + "embeddings.LayerNorm")
    additive = (1.0 - mask[:, None, None, :].float()) * -10000.0
    for i in range(depth):
        layer = f"{p}encoder.layer.{i}."
        h = attention(h, h, layer + "attention", additive)
        h = attention(h, enc, layer + "crossattention", 0.0)
        h = ln(lin(F.gelu(lin(h, layer + "intermediate.dense")), layer + "output.dense") + h, layer + "output.LayerNorm")
    return h


def ref_image_reward(sd, pixels, ids, mask):
    enc = ref_vit(sd, pixels, TINY_BLIP_VISION["num_attention_heads"], TINY_BLIP_VISION["patch_size"],
                  TINY_BLIP_VISION["num_hidden_layers"])
    h = ref_bert(sd, ids, mask, enc, TINY_BLIP_TEXT["num_attention_heads"], TINY_BLIP_TEXT["num_hidden_layers"])[:, 0]
    for i in (0, 2, 4, 6, 7):  # Linear layers of the MLP; dropouts are inactive in eval
        h = F.linear(h, sd[f"mlp.layers.{i}.weight"], sd[f"mlp.layers.{i}.bias"])
    return ((h - IMAGE_REWARD_MEAN) / IMAGE_REWARD_STD).squeeze(-1)


@pytest.fixture(scope="module")
def reward(image_reward_files):
    path, tokenizer, _ = image_reward_files
    return build_reward({"name": "image_reward", "path": str(path), "tokenizer_path": str(tokenizer),
                         "vision": TINY_BLIP_VISION, "text": TINY_BLIP_TEXT})


def test_scores_equal_the_reference_blip_forward(reward, image_reward_files):
    _, _, state = image_reward_files
    images = torch.rand(2, 3, 48, 40) * 2 - 1
    ours = score(reward, images, PROMPTS, [{}, {}])
    tokens = reward.tokenizer(PROMPTS, padding="max_length", truncation=True, max_length=35, return_tensors="pt")
    assert tokens["input_ids"].shape == (2, MAX_PROMPT_TOKENS) and tokens["input_ids"][0, 0] == reward.tokenizer.cls_token_id
    with torch.no_grad():
        expected = ref_image_reward(state, published_pixels(images, 32), tokens["input_ids"], tokens["attention_mask"])
    assert torch.allclose(ours, expected, atol=1e-4), (ours, expected)
    assert torch.equal(ours, score(reward, images, PROMPTS, [{}, {}]))


def test_published_constants_and_head():
    assert IMAGE_REWARD_MEAN == 0.16717362830052426 and IMAGE_REWARD_STD == 1.0333394966054072
    assert MAX_PROMPT_TOKENS == 35


def test_prompt_changes_the_score(reward):
    images = torch.rand(1, 3, 32, 32).repeat(2, 1, 1, 1) * 2 - 1
    values = score(reward, images, PROMPTS, [{}, {}])
    assert values[0] != values[1]


def test_a_checkpoint_of_another_model_is_named(image_reward_files):
    _, _, state = image_reward_files
    with pytest.raises(ValueError, match="text_decoder"):
        convert_image_reward_state({**state, "blip.text_decoder.cls.weight": torch.zeros(1)})
