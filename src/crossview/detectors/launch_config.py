"""below-roofline from the launch configuration (issue 37): kernels whose grid × block cannot
fill the GPU, read from the timeline (Kineto args, nsys CUPTI_ACTIVITY_KIND_KERNEL), not only
from ncu.

A kernel launched with fewer blocks than `launch_grid_sm_share` of its GPU's SMs leaves most
SMs idle for its whole run, and one with fewer threads per block than a warp leaves most lanes
of every warp empty; when such kernels hold `launch_config_yellow_share` of the kernel time
(comm kernels apart: NCCL sizes its grid by channels) the claim names them with their grid,
block and the GPU's SM count, and the fix gives them work for every SM (more blocks, a
grid-stride loop, a full warp per block) — or, for a library kernel whose grid follows its
call, more work per call. Achieved occupancy is ncu's (detectors/below_roofline.py): Kineto's
"est. achieved occupancy %" is 0 for most kernels of the shared captures, so it is not read.
"""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import Claim, Count, Facts, FixPart, Ns, Owns, Phrasing
from crossview.detectors.common import crossed, kernel_cites, ms, pct, short
from crossview.detectors.declare import About, Declaration
from crossview.sol.kernel_inputs import library_kernel_pattern
from crossview.views.device import launch_shapes
from crossview.views.views import Views

PATTERN = "below-roofline"
FIX = "launch-config"


class Launch(Struct, frozen=True, kw_only=True):
    name: str
    grid: str  # as recorded
    block: str
    blocks: Count
    threads: Count  # per block
    sms: Count  # of its GPU
    calls: Count
    ns: Ns
    library: bool  # a library kernel: its grid follows the call's shape


class LaunchConfig(Facts, frozen=True, kw_only=True):
    launches: tuple[Launch, ...]
    kernel_ns: Ns
    warp: Count  # launch_block_min_threads


def detect(v: Views) -> list[Claim]:
    m, lim = v.metrics, v.limits
    if m.cpu_only or not m.kernel_time_ns or v.kernels:
        return []
    lib = library_kernel_pattern()
    # every python frame on the hot path is library / engine code: its kernels are the
    # library's too, whatever their names (a vLLM step's FlashInfer attention)
    engine_code = v.context.code == "library"
    rows = launch_shapes.small(v, lim.launch_grid_sm_share, lim.launch_block_min_threads)
    launches = [Launch(name=str(n), grid=str(g), block=str(b), blocks=int(nb or 0),
                       threads=int(nt or 0), sms=int(s), calls=int(c), ns=int(t),
                       library=engine_code or bool(lib.search(str(n))))
                for n, g, b, nb, nt, s, c, t in rows]
    ns = sum(x.ns for x in launches)
    share = ns / m.kernel_time_ns
    cut = crossed(share, lim.launch_config_red_share, lim.launch_config_yellow_share,
                  ("launch_config_red_share", "launch_config_yellow_share"))
    if cut is None:
        return []
    top = launches[0]
    caveats = ("startup-only",) if v.account is not None and v.account.steady_fallback else ()
    return [Claim(
        pattern=PATTERN, form="launch-config", share=share, basis="kernel_time", tier=cut[0],
        cutoff=cut[1], caveats=caveats, owns=Owns(kernels=tuple(x.name for x in launches)),
        fix=(FixPart(key=FIX, flags=("library",) if top.library else (),
                     subject=f"`{short(top.name, 70)}`",
                     fill=(("sms", str(top.sms)), ("blocks", f"{top.blocks:,}"),
                           ("threads", f"{top.threads:,}"))),),
        cites=kernel_cites(v, "launch-config"),
        facts=LaunchConfig(launches=tuple(launches[:8]), kernel_ns=m.kernel_time_ns,
                           warp=lim.launch_block_min_threads))]


def _why(x: Launch, warp: int) -> str:
    parts = []
    if x.blocks < x.sms:
        parts.append(f"{x.blocks:,} block{'s' if x.blocks != 1 else ''} for {x.sms} SMs "
                     f"({x.sms - x.blocks:,} SMs get no block for its whole run)")
    if x.threads < warp:
        parts.append(f"{x.threads:,} thread{'s' if x.threads != 1 else ''} per block, under a "
                     f"warp of {warp}: at most {x.threads}/{warp} of each warp's lanes work")
    return "; ".join(parts)


def _floor(x: Launch, warp: int) -> float:
    return x.ns * min(1.0, x.blocks / x.sms) * min(1.0, x.threads / warp)


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, LaunchConfig)
    lines = [f"`{short(x.name, 70)}` ×{x.calls:,} ({ms(x.ns)}, {pct(x.ns / f.kernel_ns)} of "
             f"kernel time) launched with grid {x.grid} × block {x.block}: {_why(x, f.warp)}"
             for x in f.launches[:3]]
    more = len(f.launches) - 3
    top = f.launches[0]
    total = top.blocks * top.threads
    return Phrasing(
        title=(f"Launch configuration cannot fill the GPU: `{short(top.name, 60)}` runs "
               f"{total:,} thread{'s' if total != 1 else ''} on {top.sms} SMs "
               f"({pct(c.share)} of kernel time)"),
        observation="; ".join(lines) + (f"; {more} more kernel{'s' if more != 1 else ''} "
                                        "alike" if more > 0 else "") + ". Grid and block as "
        "recorded with each launch (rigor L2); how busy each SM's warps were is ncu's to say "
        "(`ncu --section LaunchStats --section Occupancy`).",
        effect=(f"Spread over every SM and every lane of its warps, `{short(top.name, 50)}`'s "
                f"{ms(top.ns)} could take as little as {ms(int(_floor(top, f.warp)))} (time × "
                "blocks ÷ SMs × threads ÷ warp, each thread at its present speed); an A/B "
                "compares the kernel's time before and after."),
        details={"kernels": [{"name": x.name, "grid": x.grid, "block": x.block,
                              "blocks": x.blocks, "threads_per_block": x.threads,
                              "sms": x.sms, "calls": x.calls, "time_ns": x.ns}
                             for x in f.launches]})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("launch_grid_sm_share", "launch_block_min_threads",
                "launch_config_yellow_share", "launch_config_red_share"),
    fix_keys=(FIX,), about=About(side="GPU kernel", kernel_side=True))
