"""Tree processors (views/host/tree_ops.py) on hand-built trees, and in the real Markdown recap."""

from __future__ import annotations

import pytest

from conftest import SHARED_DATA
from crossview.analysis import analyze
from crossview.render import markdown
from crossview.views.host import tree_ops
from crossview.views.host.calltree import TreeNode

DATA = SHARED_DATA / "kineto"
W0 = DATA / "kineto_v100_resnet50_workers0.pt.trace.json.gz"
QWEN = DATA / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"


def _n(frame: str, t: int, kind: str = "op", kids: list[TreeNode] | None = None,
       sync: bool = False) -> TreeNode:
    return TreeNode(frame, kind, time_ns=t, count=1, children=kids or [], sync=sync)


def test_merge_steps_and_layers() -> None:
    roots = [_n(f"ProfilerStep#{i}", 10, kids=[
        _n("aten::mm", 6, kids=[_n("gemm", 6, "kernel")]),
        _n(f"EncoderLayer_{i}", 4)]) for i in (5, 6, 7)]
    out = tree_ops.merge_repeats(roots)
    assert [(n.frame, n.repeats, n.time_ns) for n in out] == [("ProfilerStep#N", 3, 30)]
    kids = {(c.frame, c.repeats, c.time_ns) for c in out[0].children}
    # the same op met under each merged step is one node, not "×3"; indexed layers are ×3
    assert kids == {("aten::mm", 1, 18), ("EncoderLayer_N", 3, 12)}
    assert roots[0].frame == "ProfilerStep#5"  # inputs untouched
    # kernel names keep their digits (template arguments, not indices)
    assert tree_ops.normalized("volta_sgemm_64x64_nt", "kernel") == "volta_sgemm_64x64_nt"
    assert tree_ops.normalized("model.layers.12.mlp", "op") == "model.layers.N.mlp"


def test_collapse_prune_depth() -> None:
    tree = [_n("a", 100, kids=[_n("b", 100, kids=[_n("c", 60), _n("d", 1), _n("e", 39)])])]
    col = tree_ops.collapse_chains(tree)
    assert col[0].frame == "a › b" and [c.frame for c in col[0].children] == ["c", "d", "e"]
    pr = tree_ops.prune(col, 100, 0.05, 1)
    assert [c.frame for c in pr[0].children] == ["c"]
    assert tree_ops.depth_limit(col, 1)[0].children == []


def test_syncs_sit_under_their_calling_frame() -> None:
    gpu = [_n("step", 50, kids=[_n("fwd", 50, kids=[_n("k", 50, "kernel")])])]
    cpu = [_n("step", 80, kids=[_n("fwd", 60), _n("cudaStreamSynchronize", 20, "runtime",
                                                     sync=True)]),
           _n("other", 5, kids=[_n("cudaDeviceSynchronize", 5, "runtime", sync=True)])]
    placed, homeless = tree_ops.place_syncs(gpu, cpu)
    assert [(c.frame, c.kind) for c in placed[0].children] == [
        ("fwd", "op"), ("cudaStreamSynchronize", "sync")]
    assert [h.frame for h in homeless] == ["cudaDeviceSynchronize"]
    assert len(gpu[0].children) == 1  # input untouched


@pytest.mark.skipif(not W0.exists() or not QWEN.exists(), reason="../shared/data absent")
def test_recap_trees_merge_repeats_and_place_syncs() -> None:
    md = markdown.render(analyze([W0]))
    tree = md.split("**Observed call tree — GPU view**")[1].split("```")[1]
    # six ProfilerStep#16…#21 lines became one
    assert tree.count("ProfilerStep#N ×6") == 1 and "ProfilerStep#17" not in tree
    # the per-step stream syncs sit under the step, not at the top level
    lines = tree.splitlines()
    i = next(i for i, ln in enumerate(lines) if "cudaStreamSynchronize ×12" in ln)
    assert lines[i].startswith("│   ")
    md2 = markdown.render(analyze([QWEN]))
    assert "nn.Module: Qwen2DecoderLayer_N ×24" in md2  # 24 decoder layers of Qwen1.5-0.5B


def test_copy_keeps_every_field() -> None:
    """_copy builds the node field by field (faster than dataclasses.replace): a field added
    to TreeNode and not copied would be lost silently."""
    from dataclasses import fields

    from crossview.views.host.tree_ops import _copy

    leaf = TreeNode("k", "kernel", 1)
    n = TreeNode("f", "op", 7, 3, 2, "gemm", True, [leaf], 4)
    c = _copy(n)
    for f in fields(TreeNode):
        assert getattr(c, f.name) == getattr(n, f.name), f.name
    assert c.children is not n.children
    assert _copy(n, "g").frame == "g"


def test_normalized_is_memoized_and_the_same() -> None:
    from crossview.views.host.tree_ops import normalized

    assert normalized("model.layers.3.mlp", "python") == "model.layers.N.mlp"
    assert normalized("model.layers.3.mlp", "python") == "model.layers.N.mlp"
    assert normalized("ProfilerStep#12", "annotation") == "ProfilerStep#N"
    assert normalized("ProfilerStep#12", "kernel") == "ProfilerStep#12"
