"""Where a fix is said to go: the hottest *user* frame, never the standard library.

The H100 Qwen trace's host stacks start in `multiprocessing/spawn.py(122): spawn_main` (a
stdlib package folder, not a `.py` module at the top) and reach the user's own
`moca/application/profile/profile_model.py(37): _profile_model` (read by hand in the trace's
python_function events); the recap must name the latter.
"""

from __future__ import annotations

import pytest

from conftest import SHARED_DATA
from crossview.analysis import analyze
from crossview.knowledge.frames import is_user_frame

TRACE = (SHARED_DATA / "kineto"
         / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz")


@pytest.mark.parametrize("name", [
    "multiprocessing/spawn.py(122): spawn_main", "multiprocessing.py(3): x",
    "importlib/__init__.py(126): import_module", "threading.py(1016): _bootstrap_inner",
    "concurrent/futures/thread.py(58): run", "site-packages/torch/nn/modules/module.py(1): f"])
def test_library_frames(name: str) -> None:
    assert not is_user_frame(name)


def test_user_frames() -> None:
    assert is_user_frame("moca/application/profile/profile_model.py(37): _profile_model")
    assert is_user_frame("train.py(10): main")


@pytest.mark.skipif(not TRACE.exists(), reason=f"{TRACE} absent (../shared/data)")
def test_fix_points_at_the_users_frame() -> None:
    a = analyze([TRACE])
    assert a.views is not None
    text = " ".join(f.fix for f in a.findings if f.fix)
    assert "your code at `moca/application/profile/profile_model.py(37): _profile_model`" in text
    assert "spawn_main" not in text
