"""The app's chat conversation, kept in the workspace so that a page reload (a new
browser session) shows it again: ``<workspace>/chat/history.json``, a JSON list of
message dicts (``{"role": "user" | "assistant", "text", ...}``), written to a temporary
file and renamed (a reader never sees half a file). Only the newest
:data:`MAX_MESSAGES` messages are kept.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

__all__ = ["MAX_MESSAGES", "chat_log_path", "load_chat_log", "save_chat_log"]

#: Messages kept (user and assistant turns together).
MAX_MESSAGES = 200


def chat_log_path(workspace: str | os.PathLike) -> Path:
    """``<workspace>/chat/history.json``."""
    return Path(workspace) / "chat" / "history.json"


def load_chat_log(workspace: str | os.PathLike) -> list[dict[str, Any]]:
    """The stored conversation (oldest first); ``[]`` when there is none or the file is
    unreadable (a damaged log is not an error: the chat starts empty)."""
    try:
        data = json.loads(chat_log_path(workspace).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [m for m in data if isinstance(m, dict) and m.get("role") in ("user", "assistant")] \
        if isinstance(data, list) else []


def save_chat_log(workspace: str | os.PathLike, messages: Sequence[dict[str, Any]]) -> None:
    """Store the conversation (the newest :data:`MAX_MESSAGES` messages; values JSON
    cannot hold are stored as text). An empty list clears it.

    Raises:
        OSError: the workspace is not writable.
    """
    p = chat_log_path(workspace)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".history.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(list(messages)[-MAX_MESSAGES:], ensure_ascii=False, default=str), encoding="utf-8")
    os.replace(tmp, p)
