"""A question answered while its text is shown: the pieces of the answer as they come,
then the same :class:`~docmaster_core.qa.ask.QAResult` a plain ``ask`` gives.

:class:`AnswerStream` runs one ``ask`` (the only answering path) in a worker thread
that hands each text piece over a queue; iterating the stream yields the pieces (for
``st.write_stream`` or a terminal), and :attr:`AnswerStream.result` holds the result
once the iteration ends. An error of the run is raised in the iterating thread.
"""
from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Iterator

__all__ = ["AnswerStream"]

_DONE = object()


class AnswerStream:
    """Iterate the answer's text pieces (str) of ``run(on_piece)``; then read :attr:`result`.

    Args:
        run: Called once in a worker thread with ``on_piece(text: str)``; returns the
            final result (a ``QAResult``).
        timeout: Seconds to wait for the next piece before giving up.

    Raises (while iterating):
        Whatever ``run`` raised (e.g. ``RetrievalError``, ``LLMError``).
        TimeoutError: no piece and no end within ``timeout`` seconds.
    """

    def __init__(self, run: Callable[[Callable[[str], None]], Any], *, timeout: float = 600.0):
        self._run = run
        self._timeout = float(timeout)
        self._q: queue.Queue = queue.Queue()
        self._result: Any = None
        self._error: BaseException | None = None
        self._started = False

    def _work(self) -> None:
        try:
            self._result = self._run(lambda piece: self._q.put(str(piece)))
        except BaseException as e:  # noqa: BLE001 - handed to the iterating thread
            self._error = e
        finally:
            self._q.put(_DONE)

    def __iter__(self) -> Iterator[str]:
        if self._started:
            raise RuntimeError("an AnswerStream can be iterated once")
        self._started = True
        th = threading.Thread(target=self._work, name="docmaster-answer", daemon=True)
        th.start()
        while True:
            try:
                item = self._q.get(timeout=self._timeout)
            except queue.Empty:
                raise TimeoutError(f"no answer text within {self._timeout:g} s") from None
            if item is _DONE:
                break
            yield item
        th.join()
        if self._error is not None:
            raise self._error

    @property
    def result(self):
        """The run's result (``QAResult``); None before the iteration has ended."""
        return self._result
