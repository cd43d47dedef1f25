"""Helpers the tests share (not tests themselves): PDFs the tests build
(:mod:`.pdf_factory`, :mod:`.layout_factory`), a toy workspace (:mod:`.toy`), a fake
OpenAI-compatible server (:mod:`.fake_openai_server`), the browser driver
(:mod:`.browser_driver`) and network helpers (:mod:`.net`)."""
