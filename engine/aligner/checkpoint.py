"""Saving and loading trained aligners, and the operator's allow-list of them.

An aligner's folder holds ``model.safetensors`` (the fine-tuned layers, the heads, the
scale and the dustbin) and ``config.json``::

    {"format": "sinkscope-aligner", "version": 1, "settings": {...}, "theta": 0.16,
     "base_model": "all-MiniLM-L6-v2", "base_sha256": "…", "dev_total_f1": 0.83,
     "epochs": 3}

The base model is not copied: loading finds it on the model allow-list by name and
refuses it when the SHA-256 of its weights is not the one the aligner was trained on.
The operator lists aligners a page may offer with ``SINKSCOPE_ALIGNERS`` (``name=folder``
pairs separated by ``;``); :func:`allowed_aligners` and :func:`describe` read folders and
``config.json`` only (no torch), :func:`load_allowed` loads one.
"""

from __future__ import annotations

import hashlib
import json
import os
import weakref
from dataclasses import dataclass
from pathlib import Path

from .. import settings as engine_settings
from .config import AlignerError, AlignerSettings

FORMAT, VERSION = "sinkscope-aligner", 1
WEIGHTS, CONFIG = "model.safetensors", "config.json"


_HASHES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def weights_hash(encoder) -> str:
    """SHA-256 of a loaded model's weights (names, dtypes, shapes and bytes, in order),
    computed once per loaded model (a shared encoder's weights never change)."""
    model = encoder.model
    if model not in _HASHES:
        h = hashlib.sha256()
        for name, t in sorted(model.state_dict().items()):
            h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
            h.update(t.detach().cpu().contiguous().numpy().tobytes())
        _HASHES[model] = h.hexdigest()
    return _HASHES[model]


def check_out(folder) -> Path:
    """The folder an aligner will be written to, checked before any work: an existing
    folder that can be written, or a new one whose parent can (it is created)."""
    path = Path(folder).expanduser()
    if path.exists() and not path.is_dir():
        raise AlignerError.of("out_not_dir", path=str(path))
    target = path if path.exists() else path.parent if str(path.parent) else Path(".")
    if not target.is_dir():
        raise AlignerError.of("out_unwritable", path=str(path),
                              reason=f"{target} does not exist")
    if not os.access(target, os.W_OK | os.X_OK):
        raise AlignerError.of("out_unwritable", path=str(path), reason="permission denied")
    try:
        path.mkdir(exist_ok=True)
        probe = path / ".sinkscope-write-check"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise AlignerError.of("out_unwritable", path=str(path), reason=e.strerror or str(e))
    return path


def save(trained, folder) -> Path:
    """Write a :class:`~engine.aligner.training.Trained` (or an aligner) to ``folder``."""
    from safetensors.torch import save_file

    aligner = getattr(trained, "aligner", trained)
    path = check_out(folder)
    doc = {"format": FORMAT, "version": VERSION, "settings": aligner.settings.to_dict(),
           "theta": float(aligner.theta), "base_model": aligner.encoder.name,
           "base_sha256": weights_hash(aligner.encoder),
           "dev_total_f1": getattr(trained, "dev_total_f1", None),
           "epochs": getattr(trained, "epochs", None)}
    try:
        save_file({k: v.detach().cpu().contiguous() for k, v in aligner.state_dict().items()},
                  str(path / WEIGHTS))
        (path / CONFIG).write_text(json.dumps(doc, indent=1) + "\n")
    except OSError as e:
        raise AlignerError.of("out_unwritable", path=str(path), reason=e.strerror or str(e))
    return path


def read_config(folder) -> dict:
    """``config.json`` of an aligner folder, checked (no torch)."""
    path = Path(folder).expanduser()
    if not (path / CONFIG).is_file() or not (path / WEIGHTS).is_file():
        raise AlignerError.of("not_aligner", path=str(path),
                              reason=f"it needs {WEIGHTS} and {CONFIG}")
    try:
        doc = json.loads((path / CONFIG).read_text())
    except (OSError, ValueError) as e:
        raise AlignerError.of("bad_checkpoint", path=str(path), reason=f"{CONFIG}: {e}")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise AlignerError.of("not_aligner", path=str(path),
                              reason=f"{CONFIG} is not a sinkscope aligner's")
    if doc.get("version") != VERSION or not isinstance(doc.get("settings"), dict) or \
            not isinstance(doc.get("theta"), (int, float)) or \
            not isinstance(doc.get("base_sha256"), str):
        raise AlignerError.of("bad_checkpoint", path=str(path),
                              reason=f"{CONFIG} lacks version {VERSION}, settings, theta or "
                                     "base_sha256")
    if "eps" not in doc["settings"]:  # saved before ε was a setting: θ was tuned at ε = 1
        doc["settings"]["eps"] = 1.0
    try:
        AlignerSettings.from_dict(doc["settings"])
    except (AlignerError, TypeError) as e:
        raise AlignerError.of("bad_checkpoint", path=str(path), reason=str(e))
    if not 0 <= doc["theta"] < 1:
        raise AlignerError.of("bad_checkpoint", path=str(path), reason="theta not in [0, 1)")
    return doc


def load(folder, *, encoder=None, device: str | None = None, name: str | None = None):
    """The aligner saved in ``folder``, on its base model.

    Args:
        encoder: the base model already loaded (it must be the one the aligner was
            trained on); else it is loaded from the model allow-list by name.
        device: where to load the base model (when ``encoder`` is None).
        name: what the aligner is called in its alignments (default: the folder's name).

    Raises:
        AlignerError: not an aligner's folder, malformed files, or another base model.
    """
    from safetensors.torch import load_file

    from .model import Aligner
    from .training import load_encoder

    path = Path(folder).expanduser()
    doc = read_config(path)
    settings = AlignerSettings.from_dict(doc["settings"])
    encoder = encoder or load_encoder(settings, device)
    given = weights_hash(encoder)
    if given != doc["base_sha256"] or encoder.name != settings.model:
        raise AlignerError.of("other_base", path=str(path), trained=settings.model,
                              trained_hash=doc["base_sha256"][:12], given=encoder.name,
                              given_hash=given[:12])
    try:
        aligner = Aligner(encoder, settings)
        state = load_file(str(path / WEIGHTS), device=str(encoder.device))
        aligner.load_state_dict(state, strict=True)
    except AlignerError:
        raise
    except Exception as e:  # truncated file, wrong tensors or shapes: say so
        raise AlignerError.of("bad_checkpoint", path=str(path),
                              reason=f"{type(e).__name__}: {str(e)[:200]}")
    aligner.theta = float(doc["theta"])
    aligner.name = name or path.name
    return aligner.eval()


def allowed_aligners() -> dict[str, Path]:
    """The operator's aligners (``SINKSCOPE_ALIGNERS``): name → folder (not checked)."""
    out: dict[str, Path] = {}
    for item in filter(None, (s.strip() for s in engine_settings.CONFIG.aligners.split(";"))):
        name, sep, folder = item.partition("=")
        if not sep or not name.strip() or not folder.strip():
            raise AlignerError.of("bad_list", entry=item)
        out[name.strip()] = Path(folder.strip()).expanduser()
    return out


@dataclass(frozen=True)
class AlignerInfo:
    """What a page shows about an allowed aligner (from its ``config.json``)."""

    name: str
    folder: str
    base_model: str
    final: str
    theta: float
    dev_total_f1: float | None


def describe() -> list[AlignerInfo]:
    """Every allowed aligner whose folder holds a well-formed aligner, by name (no torch)."""
    out = []
    for name, folder in sorted(allowed_aligners().items()):
        try:
            doc = read_config(folder)
        except AlignerError:
            continue
        f1 = doc.get("dev_total_f1")
        out.append(AlignerInfo(name, str(folder), str(doc["settings"].get("model", "")),
                               str(doc["settings"].get("final", "")), float(doc["theta"]),
                               float(f1) if isinstance(f1, (int, float)) else None))
    return out


def load_allowed(name: str, *, encoder=None, device: str | None = None):
    """The allowed aligner ``name`` (see :func:`load`); an :class:`AlignerError` names the
    allowed ones when it is not listed."""
    allowed = allowed_aligners()
    if name not in allowed:
        raise AlignerError.of("not_listed", name=str(name)[:200],
                              names=", ".join(sorted(allowed)) or "(none)")
    return load(allowed[name], encoder=encoder, device=device, name=name)
