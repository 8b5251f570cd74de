"""`analyze`'s kept answer (cache/answer.py, cli/answers.py, decision 0845): a second look at
the same bytes with the same command prints the same text, says the same lines and exits
with the same status without running the analysis; another input byte, option or setting is
another answer; a damaged answer is removed and the command runs.

A hit is told apart from a run by removing the capture cache's stores after the first run: a
run would read the capture and keep a store again, a hit opens nothing. Real capture: the
MI300X vLLM decode trace (425 kernels, test_cache.py counts them with gzip + json).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import SHARED_DATA, copied_capture, run_cli, shared_file
from crossview.cache import answer, entry

MI300X = SHARED_DATA / "kineto" / "tracelens_mi300x_vllm_decode_full_graph.json.gz"


@pytest.fixture()
def trace(tmp_path: Path) -> Path:
    return copied_capture(MI300X, tmp_path)


def _run(cache: Path, *args: str | Path) -> tuple[int, str, str]:
    r = run_cli("--cache-dir", cache, "-q", "analyze", *args,
                env={"CROSSVIEW_NO_CACHE": ""})
    return r.returncode, r.stdout, r.stderr


def _stores(cache: Path) -> list[Path]:
    return list((cache / entry.STORES).glob(f"*{entry.SUFFIX}"))


def test_second_look_is_the_kept_answer(trace: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _run(cache, trace, "-f", "json")
    assert first[0] == 0 and '"findings"' in first[1]
    assert len(list((cache / answer.ANSWERS).glob("*.crossview.json"))) == 1
    shutil.rmtree(cache / entry.STORES)
    again = _run(cache, trace, "-f", "json")
    assert again == first
    assert not _stores(cache)  # nothing was read: the answer was kept
    # -o elsewhere is the same answer, written there
    out = tmp_path / "o.json"
    code, stdout, _ = _run(cache, trace, "-f", "json", "-o", out)
    assert code == 0 and stdout == "" and out.read_text() == first[1]
    assert not _stores(cache)
    # another option is another answer (the Markdown recap, read again)
    md = _run(cache, trace)
    assert md[0] == 0 and md[1].startswith("# ") and _stores(cache)


def test_changed_bytes_are_another_answer(tmp_path: Path) -> None:
    """A synthetic two-kernel Kineto trace (no shared capture is small enough to edit by
    hand): its second kernel's duration edited, the recap's kernel time follows."""
    src = tmp_path / "t.json"
    text = ('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,'
            ' "ts": 10, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1}},'
            ' {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20,'
            ' "dur": DUR, "args": {"device": 0, "stream": 7, "correlation": 2}}]}')
    src.write_text(text.replace("DUR", "5"))
    cache = tmp_path / "cache"
    a = _run(cache, src, "-f", "json")
    src.write_text(text.replace("DUR", "15"))
    b = _run(cache, src, "-f", "json")
    assert a[0] == b[0] == 0
    # 5 + 5 µs, then 5 + 15 µs of kernel `k` (the events above)
    assert [k["time_ns"] for k in json.loads(a[1])["top_kernels"]] == [10_000]
    assert [k["time_ns"] for k in json.loads(b[1])["top_kernels"]] == [20_000]


def test_warnings_and_status_are_said_again(trace: Path, tmp_path: Path) -> None:
    """A truncated capture beside a sound one: its warning or error line and the exit
    status are the same on the kept answer."""
    bad = trace.parent / "cut.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur"')
    cache = tmp_path / "cache"
    first = _run(cache, trace.parent)
    assert "cut.json" in first[2]
    shutil.rmtree(cache / entry.STORES, ignore_errors=True)
    again = _run(cache, trace.parent)
    assert again == first
    assert not _stores(cache)


def test_a_damaged_answer_is_removed_and_the_command_runs(trace: Path, tmp_path: Path
                                                          ) -> None:
    cache = tmp_path / "cache"
    first = _run(cache, trace, "-f", "json")
    [kept] = (cache / answer.ANSWERS).glob("*.crossview.json")
    kept.write_text(kept.read_text().replace("findings", "findingz", 1))
    shutil.rmtree(cache / entry.STORES)
    again = _run(cache, trace, "-f", "json")
    assert again == first and _stores(cache)  # read again, not the edited text
    assert "findingz" not in kept.read_text()  # kept again, whole, under the same name


def test_no_cache_keeps_no_answer_and_an_output_onto_an_input_is_refused(
        trace: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    r = run_cli("--cache-dir", cache, "--no-cache", "-q", "analyze", trace,
                env={"CROSSVIEW_NO_CACHE": ""})
    assert r.returncode == 0 and not cache.exists()
    _run(cache, trace, "-f", "json")
    code, _, err = _run(cache, trace, "-f", "json", "-o", trace)
    assert code == 2 and "trace.json.gz" in err
    assert trace.read_bytes() == shared_file(MI300X).read_bytes()


def test_the_key_follows_settings_and_the_folder(trace: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    base = answer.key_of(["analyze", str(trace)], [trace], None)
    assert base and base == answer.key_of(["-q", "analyze", str(trace)], [trace], None)
    monkeypatch.setenv("CROSSVIEW_MEMORY_LIMIT", "1GB")
    assert answer.key_of(["analyze", str(trace)], [trace], None) != base
    monkeypatch.delenv("CROSSVIEW_MEMORY_LIMIT")
    monkeypatch.chdir(tmp_path)
    assert answer.key_of(["analyze", str(trace)], [trace], None) != base
    assert answer.key_of(["analyze", "x"], [tmp_path / "missing"], None) is None
