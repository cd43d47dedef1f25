"""Follow-up question answering (SPEC F7): cited answers over the chosen documents
(:mod:`.ask`), passage candidates (:mod:`.candidates`), passage selection and the
not-found answer (:mod:`.answering`), and the streamed answer (:mod:`.stream`)."""
from __future__ import annotations

__all__ = ["QAResult", "ask"]


def __getattr__(name: str):  # lazy: keep `import docmaster_core.qa` light
    if name in __all__:
        from . import ask as _ask

        return getattr(_ask, name)
    raise AttributeError(f"module 'docmaster_core.qa' has no attribute {name!r}")
