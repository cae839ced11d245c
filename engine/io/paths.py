"""Checking an output path before the work that fills it, so a long run never ends by
failing to write its result."""

from __future__ import annotations

import os

from ..errors import SettingsError


def check_writable(path: str | os.PathLike, flag: str = "the output") -> None:
    """Raise a SettingsError ("could not write PATH: why; what to change") unless ``path``
    can be written: its folder exists and is writable, and the path is not a folder or a
    read-only file. ``flag`` names the option that gave it. Nothing is created."""
    p = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(p)
    why = None
    if os.path.isdir(p):
        why = "it is a folder; give a file name inside it"
    elif not os.path.isdir(folder):
        why = f"the folder {folder} does not exist; create it or give {flag} another path"
    elif os.path.exists(p) and not os.access(p, os.W_OK):
        why = f"it is read-only; give {flag} another path"
    elif not os.path.exists(p) and not os.access(folder, os.W_OK | os.X_OK):
        why = f"the folder {folder} is not writable; give {flag} another path"
    if why:
        raise SettingsError(f"could not write {path}: {why}.")
