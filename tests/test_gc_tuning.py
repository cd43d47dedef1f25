"""The collector's thresholds a workspace-holding process runs with (issue 37)."""
from __future__ import annotations

import gc

import pytest

from docmaster_core import gc_tuning


@pytest.fixture
def fresh(monkeypatch):
    before = gc.get_threshold()
    monkeypatch.setattr(gc_tuning, "_DONE", False)
    yield
    gc.set_threshold(*before)


def test_default_thresholds_are_raised_once(fresh, monkeypatch):
    monkeypatch.delenv("DOCMASTER_GC_THRESHOLD", raising=False)
    gc.set_threshold(*gc_tuning.PYTHON_DEFAULT)
    assert gc_tuning.tune_collector() == gc_tuning.GC_THRESHOLD == gc.get_threshold()
    gc.set_threshold(1000, 10, 10)  # changed afterwards by the application: left alone
    assert gc_tuning.tune_collector() == (1000, 10, 10)


def test_an_application_s_own_thresholds_and_the_opt_out_are_kept(fresh, monkeypatch):
    gc.set_threshold(5000, 15, 15)
    assert gc_tuning.tune_collector() == (5000, 15, 15)
    monkeypatch.setattr(gc_tuning, "_DONE", False)
    gc.set_threshold(*gc_tuning.PYTHON_DEFAULT)
    monkeypatch.setenv("DOCMASTER_GC_THRESHOLD", "default")
    assert gc_tuning.tune_collector() == gc_tuning.PYTHON_DEFAULT
    monkeypatch.setattr(gc_tuning, "_DONE", False)
    monkeypatch.setenv("DOCMASTER_GC_THRESHOLD", "3000,12,12")
    assert gc_tuning.tune_collector() == (3000, 12, 12)


@pytest.mark.parametrize("bad", ["20000", "a,b,c", "0,10,10"])
def test_a_bad_setting_is_named(fresh, monkeypatch, bad):
    gc.set_threshold(*gc_tuning.PYTHON_DEFAULT)
    monkeypatch.setenv("DOCMASTER_GC_THRESHOLD", bad)
    with pytest.raises(ValueError, match="DOCMASTER_GC_THRESHOLD"):
        gc_tuning.tune_collector()
