"""MCP resources hold the roots as the tools do (issue 43, item 1): a bundle that holds
symlinks to files outside the root — a Kineto trace, a model config, a sampled-stack file,
/etc/passwd — is listed by `crossview://bundle/<name>` with each such file refused at the
point of opening and nothing of the file in the answer (not its format, events or notes).

Synthetic inputs (written here): the files behind the links carry a marker string that must
never appear in a result; the good trace beside them is the shared MI300X capture.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")

from mcp import Client  # noqa: E402

from conftest import SHARED_DATA  # noqa: E402
from crossview.mcp.server import build  # noqa: E402

TRACE = SHARED_DATA / "kineto" / "tracelens_mi300x_vllm_decode_full_graph.json.gz"
MARK = "outside-marker-7f3a"


def _plant(tmp: Path) -> tuple[Path, Path]:
    outside = tmp / "outside"
    outside.mkdir()
    (outside / "t.pt.trace.json").write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": MARK, "ts": 1, "dur": 5, "pid": 0, "tid": 7}]}))
    (outside / "cfg.json").write_text(json.dumps({"hidden_size": MARK}))
    (outside / "s.folded").write_text(f"main;{MARK} 150\nmain;other 5\n")
    (outside / "notes.txt").write_text(f"{MARK} 1\n")
    root = tmp / "root"
    bundle = root / "b"
    bundle.mkdir(parents=True)
    (bundle / "linked.pt.trace.json").symlink_to(outside / "t.pt.trace.json")
    (bundle / "config.json").symlink_to(outside / "cfg.json")
    (bundle / "stacks.folded").symlink_to(outside / "s.folded")
    (bundle / "notes.txt").symlink_to(outside / "notes.txt")  # a generic extension
    if Path("/etc/passwd").is_file():
        (bundle / "passwd.txt").symlink_to("/etc/passwd")
    (root / "escape").symlink_to(outside)  # a top-level entry that leads out
    return root, bundle


def _read(server: object, uri: str) -> tuple[bool, str]:
    async def go() -> tuple[bool, str]:
        async with Client(server) as c:  # type: ignore[arg-type]
            try:
                res = await c.read_resource(uri)
            except Exception as e:  # the SDK raises the server's error for a resource
                return True, str(e)
            return False, res.contents[0].text  # type: ignore[union-attr]
    return anyio.run(go)


def _links(bundle: Path) -> set[str]:
    return {p.name for p in bundle.iterdir() if p.is_symlink()}


def test_bundle_resource_refuses_every_link_out_of_the_root(tmp_path: Path) -> None:
    root, bundle = _plant(tmp_path)
    good = TRACE.is_file()
    if good:
        shutil.copyfile(TRACE, bundle / TRACE.name)
    err, text = _read(build([root]), "crossview://bundle/b")
    assert MARK not in text and "root:x:0:0" not in text
    if not good:  # only escapes: the call is refused, naming the reason, nothing else
        assert err and "outside the allowed roots" in text
        return
    assert not err, text
    arts = {Path(a["path"]).name: a for a in json.loads(text)["artifacts"]}
    for name in _links(bundle):
        a = arts[name]
        assert a["status"] == "refused", a
        assert a["kind"] == "unknown", a  # its format is not revealed
        assert a["problems"] == ["outside the allowed roots (symlinks are resolved): not read"]
        assert not a.get("notes") and not a.get("events"), a
    assert arts[TRACE.name]["status"] == "ok"  # the good capture beside them is read


def test_top_level_link_and_path_names_are_refused(tmp_path: Path) -> None:
    root, _ = _plant(tmp_path)
    server = build([root])
    for uri in ("crossview://bundle/escape", "crossview://bundle/..",
                "crossview://bundle/.hidden"):
        err, text = _read(server, uri)
        assert err, (uri, text)
        assert MARK not in text
    err, text = _read(server, "crossview://bundles")
    assert not err and "escape" not in text  # not offered either
