"""Recap findings' expected effects from the replay (issue 16): a finding whose pattern maps
to a lever (knowledge/replay.yaml `finding_levers`) gets the replayed change of the median
step as its expected effect, with the self-check; when the capture cannot be replayed (more
than one timeline, no host side, self-check failed, lever unavailable) the detector's own
upper bound stays."""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.errors import CrossviewError
from crossview.knowledge.fixes import fix_for
from crossview.replay import graph as graph_mod
from crossview.replay.gc_pause import paused
from crossview.replay.levers import parse
from crossview.replay.measure import BEFORE_FIRST_OP
from crossview.replay.whatif import Baseline, CaptureReplay, Pinned, WhatIf
from crossview.store.store import Store


def _artifact(store: Store) -> int | None:
    """The one artifact with GPU ops and runtime calls (None: none or several). Each
    artifact with GPU ops (a scan of the integer ids) is probed for a runtime call, a scan
    that stops at the first one (1 M nsys host ops: a join of every op 50 ms → 2 ms)."""
    found: list[int] = []
    for (a,) in store.sql("SELECT DISTINCT artifact_id FROM gpu_ops").fetchall():
        if store.sql("SELECT EXISTS (SELECT 1 FROM host_ops WHERE artifact_id = $a"
                     " AND kind = 'runtime')", {"a": a}).fetchall()[0][0]:
            found.append(a)
            if len(found) > 1:
                return None
    return found[0] if found else None


def effect_text(w: WhatIf, lever: str) -> str | None:
    if not w.selfcheck_ok or not w.baseline:
        return None
    m = w.medians()
    meas, pred = m["measured_step_ns"], m["predicted_step_ns"]
    if not meas:
        return None
    d = pred - meas
    sign = "+" if d >= 0 else "−"
    caveat = graph_mod.params()["lever_caveats"].get(lever)
    return (f"Replay (`crossview whatif --lever {lever}`): median step {meas / 1e6:.2f} → "
            f"{pred / 1e6:.2f} ms ({sign}{abs(d) / 1e6:.2f} ms, {sign}{abs(d) / meas:.1%}; "
            f"self-check {w.selfcheck_max_error:.2%}).") + _then(w) + (
        f" {caveat}" if caveat else "")


def _top(w: WhatIf) -> tuple[str, float] | None:
    """The largest cause on the predicted median step's critical path and its share: what
    holds the step once the lever is pulled (what the next lever must move)."""
    path = w.bound_by()
    total = sum(ns for _, ns in path)
    return (path[0][0], path[0][1] / total) if path and total > 0 else None


def _then(w: WhatIf) -> str:
    top = _top(w)
    if top is None:
        return ""
    cause, share = top
    if cause == BEFORE_FIRST_OP:  # nothing recorded there: no cause to name
        return (f" Then {share:.0%} of the step's critical path lies before the first op the "
                "capture records on its lane: this capture does not say what holds it.")
    return f" Then the step is bound by {cause} ({share:.0%} of its critical path)."


def _with_next_fix(fix: str, w: WhatIf, lever: str) -> str:
    """The fix, plus the change the replay shows is needed next (replay.yaml next_fix): when
    the lever hands the predicted step to a cause its fix does not touch."""
    p, top = graph_mod.params(), _top(w)
    if not fix or top is None:
        return fix
    key = p["next_fix"].get(lever, {}).get(top[0])
    if key is None or top[1] < p["next_fix_min_share"]:
        return fix
    return f"{fix} {fix_for(key, None, share=f'{top[1]:.0%}')}"


def annotate(store: Store, findings: list[Finding]) -> list[Finding]:
    """Set the replayed expected effect on the findings a lever addresses (in place)."""
    table = graph_mod.params().get("finding_levers", {})
    kernel_side = set(graph_mod.params()["kernel_side"])
    todo = [f for f in findings if f.pattern in table or f.pattern in kernel_side]
    if not todo:
        return findings
    aid = _artifact(store)
    if aid is None or graph_mod.rows(store, aid) > graph_mod.params()["graph"]["recap_max_rows"]:
        return findings  # no single timeline, or too large to replay within a recap
    with paused():
        return _annotate(store, findings, todo, table, aid)


def _annotate(store: Store, findings: list[Finding], todo: list[Finding],
              table: dict[str, str], aid: int) -> list[Finding]:
    try:
        # one graph, steps and baseline for every lever (replay/whatif.py CaptureReplay);
        # its warm-up / outlier steps stay out of the medians
        cap = CaptureReplay(store, aid)
        # kernel-side findings no lever replays: read against the unchanged path (_on_path)
        side = [f for f in todo if f.pattern not in table and "replay_lever" not in f.details]
        done: dict[str, str] = {}  # lever → the finding whose effect already says it
        base: Baseline | None = None  # the unchanged replay, shared by every lever
        pin: Pinned | None = None  # its median step's unexplained launch → start delays
        said = False  # the pinned delays explained once; later effects refer to it
        for f in todo:
            if f.pattern not in table and "replay_lever" not in f.details:
                continue  # kernel-side findings with no lever: _on_path below
            # a detector may name the lever its fix fits (details "replay_lever"), else the
            # pattern's lever(s): the first one this capture supports
            named = f.details.get("replay_lever") or table[f.pattern]
            options = [str(x) for x in (named if isinstance(named, list) else [named])]
            same = next((x for x in options if x in done), None)
            if same is not None:
                f.expected_effect = f"The same replay as `{done[same]}` (--lever {same})."
                f.details["replay_same_as"] = done[same]
                continue
            w = None
            for lever in options:
                try:
                    spec = parse(lever)
                    if base is None:  # step times only, unless a kernel-side finding reads
                        base = cap.baseline(paths=bool(side))  # the path
                        pin = cap.pinned()
                    w = cap.predict([spec], base_paths=bool(side))  # with the predicted paths
                    break
                except CrossviewError:
                    continue  # the lever needs what this capture lacks: the next, or the bound
            if w is None:
                continue
            text = effect_text(w, lever)
            if text:
                held = pin is not None and pin.binds
                if held and pin is not None:
                    text += " " + (pin.text() if not said else pin.again())
                    said = True
                if f.expected_effect and (held or lever in graph_mod.params()["lever_caveats"]):
                    # the lever models only part of the fix: the finding's own bound stays
                    text += f" The capture's bound: {f.expected_effect}"
                f.expected_effect = text
                m = w.medians()
                rep: dict[str, object] = {"lever": lever,
                                          "measured_step_ns": m["measured_step_ns"],
                                          "predicted_step_ns": m["predicted_step_ns"],
                                          "selfcheck_max_step_error": w.selfcheck_max_error,
                                          "bound_after": [{"cause": c, "ns": ns}
                                                          for c, ns in w.bound_by()[:3]]}
                if held and pin is not None:
                    rep["pinned_ns"] = pin.pinned_ns
                # the replay predicts the fix's saving only when its lever models the whole
                # fix and nothing pins the step; else it is a lower bound beside the
                # finding's own bound (detectors.rank orders by this prediction)
                rep["predicts_fix"] = not held and lever not in graph_mod.params()[
                    "lever_caveats"]
                f.details["replay"] = rep
                f.fix = _with_next_fix(f.fix, w, lever)
                done[lever] = f.pattern
                if not held:  # a replay pinned by delays it cannot move refutes nothing
                    _short_of_claim(f, findings, m, lever)
        if side:
            base = base or cap.baseline()
            pin = pin or cap.pinned()
            if pin is None or not pin.binds:  # a pinned step's path says little of its kernels
                w = cap.predict([])
                for f in side:
                    _on_path(f, findings, w)
    except CrossviewError:
        return findings
    return findings


def _on_path(f: Finding, findings: list[Finding], w: WhatIf) -> None:
    """A kernel-side finding (faster or fewer kernels: replay.yaml `kernel_side`) against the
    unchanged replay's critical path: kernel time off that path does not shorten the step, so
    the share of GPU kernels on it bounds what the finding can save today. Below
    `finding_min_realized` of the finding's share a red becomes yellow, with or without
    another red standing (the caller re-ranks)."""
    top = _top(w)
    if not w.selfcheck_ok or f.severity not in ("red", "yellow") or f.share <= 0 or top is None:
        return
    path = w.bound_by()
    on = sum(ns for c, ns in path if c.startswith("GPU kernel")) / sum(ns for _, ns in path)
    f.details["kernel_path_share"] = on
    if on >= f.share:
        return
    cause, share = top
    f.details["path_top"] = {"cause": cause, "share": share}  # the recap's key finding says it
    claim = f.details.pop("busy_claim", None)  # "busy, so the step shortens by …": not so here
    if isinstance(claim, dict) and claim["text"] in f.expected_effect:
        f.expected_effect = f.expected_effect.replace(claim["text"], claim["instead"])
    f.expected_effect += (f" Today GPU kernels are {on:.0%} of the median step's critical path "
                          f"(the capture's replay; {share:.0%} is {cause}): faster kernels "
                          "shorten the step by at most that much until the work ahead of them "
                          "is cut.")
    if f.severity != "red" or on >= graph_mod.params()["finding_min_realized"] * f.share:
        return
    # kernel time the step does not wait on is no top issue, even with no other red: the
    # recap's key finding would otherwise call a host-bound step kernel-bound
    others = [o for o in findings if o is not f and o.severity == "red" and not _refuted(o)]
    f.severity = "yellow"
    f.observation += (f" Not what the step waits on today: GPU kernels are {on:.0%} of its "
                      "critical path — " + (
                          "fix the other 🔴 issues first (" + ", ".join(
                              f"`{o.pattern}`" for o in others[:2]) + ") and re-capture."
                          if others else
                          f"{cause} holds {share:.0%} of it: that work, not the kernels, "
                          "sets the step's pace."))


def _refuted(f: Finding) -> bool:
    rep = f.details.get("replay")
    return isinstance(rep, dict) and bool(rep.get("short_of_claim"))


def _short_of_claim(f: Finding, findings: list[Finding], m: dict[str, float],
                    lever: str) -> None:
    """The lever replays to far less than the finding's share: say so; a red with another
    red standing becomes yellow (conventions §3 ranks by predicted saving; the caller
    re-ranks). A lever with a caveat replays only part of its fix: it cannot refute."""
    meas, pred = m["measured_step_ns"], m["predicted_step_ns"]
    p = graph_mod.params()
    if (f.severity not in ("red", "yellow") or f.share <= 0 or not meas
            or f.pattern not in p["finding_refutable"] or lever in p["lever_caveats"]):
        return
    saved = (meas - pred) / meas
    if saved >= graph_mod.params()["finding_min_realized"] * f.share:
        return
    others = [o for o in findings if o is not f and o.severity == "red"
              and not _refuted(o)]
    rep = f.details["replay"]
    if isinstance(rep, dict):
        rep["short_of_claim"] = True
    first = (" — fix the other 🔴 issues first (" + ", ".join(f"`{o.pattern}`" for o in
             others[:2]) + ") and re-capture") if others else ""
    f.observation += (f" The replay does not bear this out today: the lever moves the median "
                      f"step by {max(saved, 0.0):.1%}, not the {f.share:.1%} this finding "
                      f"covers{first}.")
    if f.severity == "red" and others:
        f.severity = "yellow"
