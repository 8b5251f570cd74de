"""host-preprocessing: the GPU idles while the launching thread prepares inputs itself.

Host work inside a steady step is the workload (issue 37): image / video decode and
transforms, tokenization run on the thread that launches the kernels (the time account's
`preprocessing` slice: GPU idle while that thread was inside frames.yaml preprocessing frames)
delay every step by their length. A step that begins with them is no start-up: its first
kernel launched and started normally after them (views/device/idle_pieces.py). The lever is
to take them off the step's critical path: prepare the next inputs while the GPU runs this
step (loader workers), or on the GPU (fast image processors)."""

from __future__ import annotations

from crossview.core.claim import Claim, Facts, FixPart, Owns, Phrasing
from crossview.detectors.account_share import AccountSlice, facts, mean_of, per_step, slice_of
from crossview.detectors.common import cites, crossed, ms, pct, short
from crossview.detectors.declare import About, Declaration
from crossview.views.views import Views

PATTERN = "host-preprocessing"
CAUSES = ("preprocessing",)


class Preprocess(Facts, frozen=True, kw_only=True):
    slice: AccountSlice
    transformers: bool  # Hugging Face processors among the frames (their fast variant helps)


def detect(v: Views) -> list[Claim]:
    sl = slice_of(v, *CAUSES)
    if sl is None or not sl.ns:
        return []
    lim = v.limits
    cut = crossed(sl.share, lim.preprocess_red_share, lim.preprocess_yellow_share,
                  ("preprocess_red_share", "preprocess_yellow_share"))
    if cut is None:
        return []
    hf = any("transformers/" in f.frame for f in sl.top_frames)
    return [Claim(
        pattern=PATTERN, share=sl.share, tier=cut[0], cutoff=cut[1], owns=Owns(causes=CAUSES),
        fix=(FixPart(key=PATTERN, flags=("transformers",) if hf else (), located=True),),
        cites=cites(v, "preprocessing"), facts=Preprocess(slice=facts(sl), transformers=hf))]


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, Preprocess)
    sl = f.slice
    top = "; ".join(f"`{short(t.frame, 80)}` {ms(t.ns)}" for t in sl.top)
    return Phrasing(
        title=f"Input preprocessing on the launching thread: the GPU waits on it "
              f"{pct(c.share)} of the step",
        observation=(f"{per_step(sl)} the GPU idled {ms(sl.ns)} ({pct(c.share)} of the "
                     f"{ms(sl.wall_ns)} step, {mean_of(sl)}) while the thread that "
                     f"launches its kernels prepared inputs: {top}. That is work of every "
                     "step (the workload), not start-up."),
        effect=(f"Up to {ms(sl.ns)} per step ({pct(c.share)}) once the inputs are ready when "
                "the step needs them; an A/B compares the step time."))


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=CAUSES,
    thresholds=("preprocess_red_share", "preprocess_yellow_share"), fix_keys=(PATTERN,),
    about=About(side="host", corroborated_by=("host-cpu",)))
