"""The persistent per-capture cache (crossview/cache, issue 38): a second read of the same
content loads the stored tables instead of parsing; changed content, a damaged entry or other
reader code is read again; concurrent writers, --no-cache, the size bound and the MCP roots.

Real captures: the MI300X vLLM decode trace (425 kernels, 10,674,517 ns of kernel time) and
the H100 Qwen forward trace (1,465 kernels), both counted independently with gzip + json over
the events of cat "kernel" (as test_mcp_cache.py); the nvFuser H200 nsys export (18
kernels, data README). Every hit is checked against a fresh read of the same file, analysis
JSON byte for byte.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import SHARED_DATA, cli_command, cli_env, copied_capture, run_cli, shared_file
from crossview.analysis import analyze
from crossview.cache import entry, key
from crossview.cache.read import read_inputs
from crossview.cache.settings import CacheSettings, from_env
from crossview.render import json as json_out
from crossview.store.store import Store

KINETO = SHARED_DATA / "kineto"
MI300X = KINETO / "tracelens_mi300x_vllm_decode_full_graph.json.gz"
H100 = KINETO / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"
NSYS = SHARED_DATA / "nsys" / "nvfuser_h200_nsys2025.1.sqlite"
KERNELS = "SELECT count(*), sum(dur_ns) FROM gpu_ops WHERE kind = 'kernel'"


def _settings(folder: Path, max_bytes: int = 1 << 30) -> CacheSettings:
    return CacheSettings(folder, max_bytes, max_bytes, 10_000_000, 30 * 86400.0)


def _kernels_of(path: Path) -> int:
    """Kernels in a Kineto .json.gz, counted without crossview."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    return sum(1 for e in doc["traceEvents"] if e.get("cat") == "kernel")


def _json(paths: list[Path], cache: CacheSettings | None) -> str:
    return json_out.render(analyze(paths, cache=cache))


@pytest.fixture()
def trace(tmp_path: Path) -> Path:
    return copied_capture(MI300X, tmp_path)


def test_second_read_is_a_hit_with_the_same_answer(trace: Path, tmp_path: Path) -> None:
    s = _settings(tmp_path / "cache")
    first = read_inputs([trace], Store(), s, wait=True)
    assert first.state == "miss" and [r.status for r in first.reports] == ["ok"]
    assert len(entry.find(s.folder, first.key or "")) == 1
    store = Store()
    again = read_inputs([trace], store, s)
    assert again.state == "hit" and again.key == first.key
    assert store.sql(KERNELS).fetchall() == [(425, 10_674_517)]
    assert _kernels_of(MI300X) == 425
    # the whole analysis over the cached tables is the fresh read's, byte for byte
    assert _json([trace], s) == _json([trace], None)


def test_changed_content_is_read_again(trace: Path, tmp_path: Path) -> None:
    s = _settings(tmp_path / "cache")
    assert read_inputs([trace], Store(), s, wait=True).state == "miss"
    shutil.copyfile(shared_file(H100), trace)  # same name, other bytes
    store = Store()
    r = read_inputs([trace], store, s, wait=True)
    assert r.state == "miss"
    n = store.sql(KERNELS).fetchall()[0][0]
    assert n == _kernels_of(H100) == 1465
    assert read_inputs([trace], Store(), s).state == "hit"


def test_a_damaged_entry_is_removed_and_read_again(trace: Path, tmp_path: Path) -> None:
    s = _settings(tmp_path / "cache")
    k = read_inputs([trace], Store(), s, wait=True).key or ""
    (kept,) = entry.find(s.folder, k)
    raw = bytearray(kept.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one flipped byte: its name no longer matches its sha256
    kept.write_bytes(bytes(raw))
    store = Store()
    r = read_inputs([trace], store, s, wait=True)
    assert r.state == "miss"  # never trusted: read again, and kept anew
    assert store.sql(KERNELS).fetchall() == [(425, 10_674_517)]
    assert not kept.exists() or kept.read_bytes() != bytes(raw)
    assert read_inputs([trace], Store(), s).state == "hit"


def test_a_truncated_entry_and_wrong_metadata_are_not_used(trace: Path, tmp_path: Path
                                                            ) -> None:
    s = _settings(tmp_path / "cache")
    k = read_inputs([trace], Store(), s, wait=True).key or ""
    (kept,) = entry.find(s.folder, k)
    kept.write_bytes(kept.read_bytes()[:4096])
    assert read_inputs([trace], Store(), s, wait=True).state == "miss"
    # an entry whose bytes match its name but whose metadata names another key: not used
    (kept,) = entry.find(s.folder, k)
    other = kept.with_name("f" * 40 + kept.name[40:])
    shutil.copyfile(kept, other)
    assert entry.open_entry(Store(), s.folder, "f" * 40) is None
    assert not other.exists()


def test_other_reader_code_is_another_key(trace: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    s = _settings(tmp_path / "cache")
    assert read_inputs([trace], Store(), s, wait=True).state == "miss"
    monkeypatch.setattr(key, "code_fingerprint", lambda: "another reader")
    assert read_inputs([trace], Store(), s, wait=True).state == "miss"
    assert len(list((s.folder / entry.STORES).iterdir())) == 2


def test_rejected_inputs_and_archives_are_not_kept(tmp_path: Path) -> None:
    s = _settings(tmp_path / "cache")
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [')
    r = read_inputs([bad], Store(), s, wait=True)
    assert r.state == "miss" and r.reports[0].status not in ("ok", "partial")
    assert not list(s.folder.rglob("*.crossview.duckdb"))  # a rejection is read again
    missing = read_inputs([tmp_path / "nope.json"], Store(), s)
    assert missing.state == "uncacheable"
    shutil.make_archive(str(tmp_path / "bundle"), "gztar", root_dir=tmp_path, base_dir="bad.json")
    assert read_inputs([tmp_path / "bundle.tar.gz"], Store(), s).state == "uncacheable"


def test_nsys_export_cached_with_the_same_answer(tmp_path: Path) -> None:
    src = shared_file(NSYS)
    s = _settings(tmp_path / "cache")
    assert read_inputs([src], Store(), s, wait=True).state == "miss"
    store = Store()
    assert read_inputs([src], store, s).state == "hit"
    assert store.sql("SELECT count(*) FROM gpu_ops WHERE kind = 'kernel'").fetchall() == [(18,)]
    assert _json([src], s) == _json([src], None)


def test_least_recently_used_entries_go_past_the_bound(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    files = []
    for i in range(3):
        f = tmp_path / f"t{i}.json.gz"
        shutil.copyfile(shared_file(MI300X), f)
        files.append(f)
    big = _settings(folder)
    read_inputs([files[0]], Store(), big, wait=True)
    (one,) = list((folder / entry.STORES).iterdir())
    size = one.stat().st_size
    # room for two entries: the third write evicts the least recently used one
    s = CacheSettings(folder, int(size * 2.5), size * 2, 10_000_000, 30 * 86400.0)
    read_inputs([files[1]], Store(), s, wait=True)
    os.utime(one, (1, 1))  # the first is oldest …
    assert read_inputs([files[0]], Store(), s).state == "hit"  # … until this hit touches it
    second = entry.find(folder, key.key_of([files[1]]).digest)  # type: ignore[union-attr]
    os.utime(second[0], (2, 2))
    read_inputs([files[2]], Store(), s, wait=True)
    left = {p.name.split(".")[0] for p in (folder / entry.STORES).iterdir()}
    keys = [key.key_of([f]).digest for f in files]  # type: ignore[union-attr]
    assert left == {keys[0], keys[2]}  # the second, least recently used, went
    # an entry larger than the per-entry bound is not kept at all
    tiny = CacheSettings(tmp_path / "tiny", 1 << 30, 1024, 10_000_000, 30 * 86400.0)
    read_inputs([files[0]], Store(), tiny, wait=True)
    assert not list((tmp_path / "tiny" / entry.STORES).glob("*.crossview.duckdb"))


def test_concurrent_processes_on_one_capture(trace: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = cli_env({"CROSSVIEW_CACHE_DIR": str(cache), "CROSSVIEW_NO_CACHE": ""})
    outs = [tmp_path / f"o{i}.json" for i in range(3)]
    procs = [subprocess.Popen(cli_command("-q", "analyze", trace, "-f", "json", "-o", o),
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for o in outs]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    texts = {o.read_text() for o in outs}
    assert len(texts) == 1
    kept = list((cache / entry.STORES).glob("*.crossview.duckdb"))
    assert kept and not list((cache / entry.STORES).glob(".*"))  # no temp file left
    for k in kept:  # every entry renamed whole: its bytes hash to its name
        assert k.name.split(".")[1] == entry.file_sha256(k)[:16]
    again = run_cli("-q", "analyze", trace, "-f", "json", env={
        "CROSSVIEW_CACHE_DIR": str(cache), "CROSSVIEW_NO_CACHE": ""})
    assert again.returncode == 0 and again.stdout == texts.pop()


def test_no_cache_option_and_cache_dir_option(trace: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {"CROSSVIEW_NO_CACHE": ""}
    r = run_cli("--cache-dir", cache, "--no-cache", "-q", "analyze", trace, "-f", "json",
                env=env)
    assert r.returncode == 0, r.stderr
    assert not cache.exists()
    r2 = run_cli("--cache-dir", cache, "-q", "analyze", trace, "-f", "json", env=env)
    assert r2.returncode == 0 and r2.stdout == r.stdout
    assert len(list((cache / entry.STORES).glob("*.crossview.duckdb"))) == 1
    r3 = run_cli("--cache-size", "lots", "analyze", trace, env=env)
    assert r3.returncode == 2 and "--cache-size 'lots'" in r3.stderr


def test_settings_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                       ) -> None:
    monkeypatch.delenv("CROSSVIEW_NO_CACHE")
    monkeypatch.delenv("CROSSVIEW_CACHE_DIR", raising=False)
    monkeypatch.delenv("CROSSVIEW_CACHE_SIZE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    s = from_env()
    assert s is not None and s.folder == tmp_path / "xdg" / "crossview"
    assert s.max_bytes == 2 << 30 and s.max_entry_bytes == 1 << 30
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/not/allowed")
    s = from_env()
    assert s is not None and s.folder == Path.home() / ".cache" / "crossview"
    monkeypatch.setenv("CROSSVIEW_CACHE_SIZE", "500MB")
    monkeypatch.setenv("CROSSVIEW_CACHE_DIR", str(tmp_path / "mine"))
    s = from_env()
    assert s is not None and s.max_bytes == 500_000_000 and s.folder == tmp_path / "mine"
    monkeypatch.setenv("CROSSVIEW_NO_CACHE", "1")
    assert from_env() is None


def test_the_cache_folder_is_never_read_as_a_capture(trace: Path, tmp_path: Path) -> None:
    cache = trace.parent / "cache"  # inside the folder a walk reads
    s = _settings(cache)
    read_inputs([trace], Store(), s, wait=True)
    assert list((cache / entry.STORES).glob("*.crossview.duckdb"))
    a = analyze([trace.parent])
    assert [r.path for r in a.artifacts] == [str(trace)]
    r = run_cli("analyze", cache)
    assert r.returncode == 2 and "no input files found" in r.stderr


def test_mcp_calls_stay_inside_the_roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from crossview.mcp.cache import AnalysisCache
    from crossview.mcp.safety import Refused, Roots
    from crossview.mcp.server import build
    from crossview.mcp.tools_views import ViewTools
    from crossview.sources import guard

    outside = tmp_path / "outside" / "secret.json.gz"
    outside.parent.mkdir()
    shutil.copyfile(shared_file(H100), outside)
    root = tmp_path / "root"
    root.mkdir()
    (root / "link.json.gz").symlink_to(outside)
    shutil.copyfile(shared_file(MI300X), root / "trace.json.gz")
    s = _settings(tmp_path / "cache")
    # the CLI (no roots) has cached both the outside file and the link to it
    for p in (outside, root / "link.json.gz"):
        assert read_inputs([p], Store(), s, wait=True).state == "miss"
    with guard.restricted_to([root]):
        # under the roots the link is not keyed (never hashed) and its reader refuses it
        r = read_inputs([root / "link.json.gz"], Store(), s, wait=True)
        assert r.state == "uncacheable" and r.reports[0].status == "refused"
        assert "outside the allowed roots" in r.reports[0].problems[0]
        assert read_inputs([outside], Store(), s).state == "uncacheable"
    tools = ViewTools(AnalysisCache(Roots([root]), persistent=s))
    with pytest.raises(Refused):
        tools.gpu_metrics([str(outside)])
    monkeypatch.setenv("CROSSVIEW_CACHE_DIR", str(s.folder))
    monkeypatch.setenv("CROSSVIEW_NO_CACHE", "")
    server = build([root])
    import anyio
    from mcp import Client

    async def call(name: str, args: dict) -> tuple[bool, str]:
        async with Client(server) as c:
            res = await c.call_tool(name, args)
            return bool(res.is_error), res.content[0].text

    err, text = anyio.run(call, "gpu_metrics", {"paths": [str(root / "link.json.gz")]})
    assert err and "outside the allowed roots" in text and "1465" not in text.replace(",", "")
    err, text = anyio.run(call, "gpu_metrics", {"paths": [str(root / "trace.json.gz")]})
    assert not err, text
    # that read went through the cache: the next server process finds it there
    k = key.key_of([root / "trace.json.gz"])
    assert k is not None and entry.find(s.folder, k.digest)


def test_an_entry_holds_the_read_not_what_the_analysis_changed(trace: Path,
                                                                tmp_path: Path) -> None:
    """The entry is written beside the analysis: it must copy the store as read, not the
    device names `--gpu` writes into it meanwhile (the next run without --gpu would show
    them)."""
    from crossview.cache.read import finish_writes

    s = _settings(tmp_path / "cache")
    store = Store()
    assert read_inputs([trace], store, s).state == "miss"  # written on a second thread
    before = store.sql("SELECT device, name FROM devices ORDER BY 1").fetchall()
    store.sql("UPDATE devices SET name = 'named by --gpu'")
    finish_writes()
    again = Store()
    assert read_inputs([trace], again, s).state == "hit"
    assert again.sql("SELECT device, name FROM devices ORDER BY 1").fetchall() == before
    assert before and all(n != "named by --gpu" for _, n in before)


def test_two_runs_set_apart_alike_on_a_miss_and_a_hit(tmp_path: Path) -> None:
    """Two unrelated captures read together: the main run is analyzed, the other set apart
    (issue 40). A cache hit reads the large tables through views over the read-only entry;
    they are narrowed to the main run, so the hit answers exactly as the miss (not a refusal).
    Kernel counts: the MI300X trace alone, counted with gzip + json."""
    a, b = shared_file(MI300X), shared_file(H100)
    s = _settings(tmp_path / "cache")
    docs = []
    for _ in range(2):  # a miss, then a hit
        got = analyze([a, b], cache=s)
        assert {r.status for r in got.artifacts} == {"ok", "other-run"}
        docs.append(json_out.render(got))
    assert docs[0] == docs[1]
    kept = next(r.path for r in analyze([a, b], cache=s).artifacts if r.status == "ok")
    want = _kernels_of(Path(kept))
    assert json.loads(docs[1])["metrics"]["kernel_count"] == want
