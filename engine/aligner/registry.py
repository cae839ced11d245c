"""Trained aligners by name, where the work runs: one lookup for the whole process.

An aligner is found by its name among those :func:`register` ed in this process, then
among the operator's (``SINKSCOPE_ALIGNERS``, read here, in the process that aligns: a
served engine's replica, or the app's own process when it is embedded), then, for a name
``FILE@JOB`` (:func:`job_name`: an aligner a job trained, e.g. ``aligner@3-9f…``), among
the files of the jobs this process can read (:func:`add_source`: the embedded engine's
jobs, or the served engine's board), loaded on first use on any replica: a page keeps the
name for its session, and the engine finds the aligner wherever the work runs. :func:`lookup` loads a listed aligner once per process (on the base
model the caller already holds, when it is the aligner's) and keeps it; a loaded aligner
is shared read-only. :func:`infos` describes every aligner without loading any: name,
base model, final layer, θ.

Torch-free until an aligner is loaded.
"""

from __future__ import annotations

import io
import re
import tempfile
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .config import AlignerError

_LOCK = threading.Lock()
_REGISTERED: dict[str, object] = {}  # name → Aligner registered in this process
_LOADED: dict[str, object] = {}  # name → listed (or a job's) Aligner, loaded once
_SOURCES: list[Callable[[str, str], bytes | None]] = []  # (job id, file) → a job's zip
#: A job's trained aligner by name: ``FILE@JOB`` (the job's file, its id).
JOB_NAME = re.compile(r"^(?P<file>[A-Za-z0-9][A-Za-z0-9._-]{0,63})@"
                      r"(?P<job>[0-9a-f]{1,16}-[0-9a-f]{12})$")


def job_name(job_id: str, file: str) -> str:
    """The name a job's trained aligner is looked up by: ``FILE@JOB``."""
    return f"{file}@{job_id}"


def add_source(source: Callable[[str, str], bytes | None]) -> None:
    """Let :func:`lookup` find jobs' aligners: ``source(job_id, file)`` → the aligner's zip
    (as ``GET /v1/jobs/{id}/result?file=``) or None (no such job or file). Added once per
    process by whoever holds jobs (the embedded engine, a served replica)."""
    with _LOCK:
        if source not in _SOURCES:
            _SOURCES.append(source)


def known(name: str) -> bool:
    """Whether ``name`` may name an aligner here: a registered or listed one, or a job's
    (``FILE@JOB``, when this process can read jobs; whether the job holds it is found out
    when it is looked up)."""
    name = str(name)
    if JOB_NAME.match(name):
        with _LOCK:
            return bool(_SOURCES)
    return name in names()


@dataclass(frozen=True)
class Info:
    """What a client is told about an aligner (``GET /v1/aligners``).

    Attributes:
        name: its name. base_model: the model it was trained on. final: "sinkhorn" or
        "softmax". theta: its own link threshold θ. dev_total_f1: its dev score, if known.
        registered: True for one registered in this process, False for a listed one.
    """

    name: str
    base_model: str
    final: str
    theta: float
    dev_total_f1: float | None
    registered: bool = False

    def to_dict(self) -> dict:
        return {"name": self.name, "base_model": self.base_model, "final": self.final,
                "theta": self.theta, "dev_total_f1": self.dev_total_f1,
                "registered": self.registered}


def register(name: str, aligner) -> None:
    """Make ``aligner`` (a loaded :class:`~engine.aligner.model.Aligner`) available as
    ``name`` to :func:`lookup` in this process; it hides a listed aligner of that name.

    Raises:
        AlignerError: an empty name.
    """
    name = str(name).strip()
    if not name:
        raise AlignerError.of("not_listed", name="", names=", ".join(names()) or "(none)")
    with _LOCK:
        aligner.name = name
        _REGISTERED[name] = aligner


def names() -> list[str]:
    """Every aligner's name: the registered ones, then the operator's list."""
    from .checkpoint import allowed_aligners

    listed = allowed_aligners()
    with _LOCK:
        registered = list(_REGISTERED)
    return registered + sorted(n for n in listed if n not in registered)


def infos() -> tuple[list[Info], list[tuple[str, str]]]:
    """(every aligner that can be used, [(name, why not)] of listed ones that cannot: a
    missing folder or a malformed config.json). Reads config.json files only."""
    from .checkpoint import allowed_aligners, read_config

    with _LOCK:
        registered = dict(_REGISTERED)
    out = [Info(n, a.settings.model, a.settings.final, float(a.theta), None, True)
           for n, a in registered.items()]
    broken = []
    for name, folder in sorted(allowed_aligners().items()):
        if name in registered:
            continue
        try:
            doc = read_config(folder)
        except AlignerError as e:
            broken.append((name, str(e)))
            continue
        f1 = doc.get("dev_total_f1")
        out.append(Info(name, str(doc["settings"].get("model", "")),
                        str(doc["settings"].get("final", "")), float(doc["theta"]),
                        float(f1) if isinstance(f1, (int, float)) else None))
    return out, broken


def lookup(name: str, *, encoders: dict | None = None, device: str | None = None):
    """The aligner called ``name``: a registered one, else the operator's, loaded once per
    process (on ``encoders[base model]`` when the caller holds its base model, else the
    base model is loaded from the allow-list on ``device``).

    Raises:
        AlignerError: no aligner of that name (the message names those there are), or one
            that does not load (missing files, another base model).
    """
    from .checkpoint import allowed_aligners, load, read_config

    key = str(name)
    with _LOCK:
        found = _REGISTERED.get(key) or _LOADED.get(key)
    if found is not None:
        return found
    if JOB_NAME.match(key):
        return _job_aligner(key, encoders or {}, device)
    listed = allowed_aligners()
    if key not in listed:
        raise AlignerError.of("not_listed", name=key[:200], names=", ".join(names()) or "(none)")
    with _LOCK:  # one load per name, even when two requests ask at once
        if key not in _LOADED:
            base = read_config(listed[key])["settings"].get("model")
            _LOADED[key] = load(listed[key], encoder=(encoders or {}).get(base),
                                device=device, name=key)
        return _LOADED[key]


def _job_aligner(key: str, encoders: dict, device: str | None):
    """A job's trained aligner ``FILE@JOB``, from the first source that holds it, loaded
    once (from its zip, on the caller's copy of its base model when it holds it)."""
    from .checkpoint import load, read_config

    m = JOB_NAME.match(key)
    with _LOCK:
        sources = list(_SOURCES)
    data = None
    for source in sources:
        try:
            data = source(m["job"], m["file"])
        except Exception:  # a job that is gone or holds no such file: the next source
            data = None
        if data:
            break
    if not data:
        raise AlignerError.of("job_aligner", name=key)
    with _LOCK:
        if key not in _LOADED:
            with tempfile.TemporaryDirectory() as d:
                with zipfile.ZipFile(io.BytesIO(data)) as z:
                    folder = _unzip(z, Path(d))
                base = read_config(folder)["settings"].get("model")
                _LOADED[key] = load(folder, encoder=encoders.get(base), device=device,
                                    name=key)
        return _LOADED[key]


def _unzip(z: zipfile.ZipFile, into: Path) -> Path:
    """The aligner's folder from a job's zip (one folder holding its two files; nothing
    is written outside ``into``)."""
    from .checkpoint import CONFIG, WEIGHTS

    folders = {Path(n).parent for n in z.namelist() if Path(n).name in (CONFIG, WEIGHTS)}
    if len(folders) != 1:
        raise AlignerError.of("bad_checkpoint", path="(a job's zip)",
                              reason="not one folder with model.safetensors and config.json")
    (folder,) = folders
    out = into / "aligner"
    out.mkdir()
    for f in (CONFIG, WEIGHTS):
        (out / f).write_bytes(z.read(str(folder / f)))
    return out


def forget(name: str | None = None) -> None:
    """Drop a registered or loaded aligner (every one with ``name`` None): the next
    :func:`lookup` loads it again (tests, or an operator's list that changed)."""
    with _LOCK:
        for table in (_REGISTERED, _LOADED):
            if name is None:
                table.clear()
            else:
                table.pop(name, None)
