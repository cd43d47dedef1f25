"""What every ``docmaster`` command shares: settings from the command line's options,
the facade on the chosen workspace, JSON and one-line output, retrieval overrides."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import ConfigError

__all__ = ["settings_from_args", "open_docmaster", "print_json", "clean_line", "apply_retrieval_overrides"]


def settings_from_args(args: argparse.Namespace):
    from ..config import get_settings

    over: dict[str, dict[str, Any]] = {}
    if getattr(args, "parser", None):
        over.setdefault("parsing", {})["parser"] = args.parser
    if getattr(args, "page_limit", None) is not None:
        over.setdefault("parsing", {})["page_limit"] = args.page_limit
    if getattr(args, "llm", None):
        over.setdefault("llm", {})["backend"] = args.llm
    if getattr(args, "model", None):
        over.setdefault("llm", {})["model"] = args.model
    if getattr(args, "base_url", None):
        over.setdefault("llm", {})["base_url"] = args.base_url
    if getattr(args, "max_calls", None) is not None:
        over.setdefault("llm", {})["max_calls"] = args.max_calls
    from pydantic import ValidationError

    try:
        return get_settings(**over)
    except ValidationError as e:  # e.g. DOCMASTER_INGEST__EXECUTOR=spark: one line, no traceback
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err.get("loc", ()))
        env = "DOCMASTER_" + "__".join(str(x) for x in err.get("loc", ())).upper()
        raise ConfigError(f"invalid setting {loc} ({env}): {err.get('msg', 'invalid value')}") from None


def open_docmaster(args: argparse.Namespace, create: bool = False):
    from ..pipeline import DocMaster
    from ..store.workspace import Workspace

    ws = Workspace(args.workspace, create=create)
    return DocMaster(ws, settings_from_args(args))


def print_json(obj: Any) -> None:
    text = json.dumps(obj, indent=2, ensure_ascii=False, default=str)
    # lone surrogates (non-UTF-8 file names) cannot be written to a UTF-8 stream:
    # escape them as JSON \\uXXXX escapes, which keeps the output valid JSON
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    sys.stdout.write(text + "\n")


def clean_line(s: str) -> str:
    """One line, no control characters (document text and file names are data)."""
    return "".join(ch if ch.isprintable() else " " for ch in str(s))


def apply_retrieval_overrides(args: argparse.Namespace, dm) -> None:
    """Apply --top-k / --gamma style overrides to the facade's retrieval settings."""
    over = {}
    for name in ("gamma", "w_title", "w_text", "w_table"):
        v = getattr(args, name, None)
        if v is not None:
            over[name] = v
    if over:
        dm.settings.retrieval = dm.settings.retrieval.model_copy(update=over)
