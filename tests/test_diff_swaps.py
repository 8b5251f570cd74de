"""`crossview diff` on the lever pair (ResNet-50, DataLoader num_workers 0 → 4): kernel time
barely changes (+3.05 ms of 591.21 ms, 0.5%) while cuDNN picks other convolution kernels in the
second run (wgrad_alg0_engine 174 → 108 calls, splitK_medium 6 → 72, six kernels only in A).
Rows are no longer shown as shares of a net change inside run-to-run noise (−23 ms read
"−759.2%"), and the gemm family is named as a kernel swap. The family totals are summed from
the raw JSON here (the family of each raw name by crossview's table). Skips without
../shared/data."""

from __future__ import annotations

from collections import defaultdict

import oracle
from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze
from crossview.experiments import diff
from crossview.kernels.families import classify
from crossview.render import diff as render_diff

W0 = SHARED_DATA / "kineto" / "kineto_v100_resnet50_workers0.pt.trace.json.gz"
W4 = SHARED_DATA / "kineto" / "kineto_v100_resnet50_workers4.pt.trace.json.gz"


def _families(path) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for e in oracle.complete_events(shared_file(path)):
        if str(e.get("cat", "")).lower() == "kernel":
            out[classify(e["name"])] += oracle.us_to_ns(e["dur"])
    return out


def test_pair_net_in_noise_and_gemm_swap() -> None:
    fa, fb = _families(W0), _families(W4)
    net = sum(fb.values()) - sum(fa.values())
    assert round(net / 1e6, 2) == 3.05 and abs(net) < 0.01 * sum(fa.values())
    d = diff.compare(analyze([shared_file(W0)]), analyze([shared_file(W4)]))
    assert d.net_change_ns == net and d.net_in_noise
    assert all(r.share_of_change is None for r in d.kernels + d.families)
    (s,) = d.swaps
    assert s.family == "gemm" and s.net_ns == fb["gemm"] - fa["gemm"]
    assert (s.only_a, s.only_b) == (6, 1) and s.gross_ns >= 5 * abs(s.net_ns)
    text = render_diff.render(d)
    assert "Kernel swaps in `gemm`" in text and "−759" not in text and "-759" not in text
