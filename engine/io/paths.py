"""Checking an output path before the work that fills it, so a long run never ends by
failing to write its result."""

from __future__ import annotations

import os

from ..errors import SettingsError


def check_writable(path: str | os.PathLike, flag: str = "the output") -> None:
    """Raise a SettingsError saying what to change unless ``path`` can be written: its
    folder exists and is writable, and the path is not a folder or a read-only file.
    Nothing is created."""
    p = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(p)
    if os.path.isdir(p):
        raise SettingsError(f"{flag} {path} is a folder; give a file name inside it.")
    if not os.path.isdir(folder):
        raise SettingsError(f"{flag} {path}: the folder {folder} does not exist; create it "
                            "or choose another path.")
    if os.path.exists(p) and not os.access(p, os.W_OK):
        raise SettingsError(f"{flag} {path} is read-only; choose another path.")
    if not os.path.exists(p) and not os.access(folder, os.W_OK | os.X_OK):
        raise SettingsError(f"{flag} {path}: the folder {folder} is not writable; choose "
                            "another path.")
