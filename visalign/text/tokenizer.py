"""Build small tokenizers locally (no downloads): a character-level ``PreTrainedTokenizerFast``."""
from __future__ import annotations

from typing import Sequence

SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")


def char_tokenizer(chars: str | Sequence[str], add_bos: bool = True):
    """A character-level tokenizer over ``chars`` with ``<pad>=0, <bos>=1, <eos>=2, <unk>=3``.

    Each character is one token, decoding concatenates tokens without spaces, and encoding with
    ``add_special_tokens=True`` prepends ``<bos>`` when ``add_bos``. Saves / loads with ``save_pretrained`` /
    ``AutoTokenizer.from_pretrained``.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    chars = list(dict.fromkeys(chars))
    clash = [c for c in chars if len(c) != 1 or c in SPECIAL_TOKENS]
    if clash:
        raise ValueError(f"char_tokenizer needs single characters, got {clash[:5]}")
    vocab = {t: i for i, t in enumerate([*SPECIAL_TOKENS, *chars])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    if add_bos:
        tok.post_processor = processors.TemplateProcessing(
            single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", vocab["<bos>"])]
        )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", bos_token="<bos>", eos_token="<eos>", unk_token="<unk>"
    )
