"""Experiment plan per top lever: the two arms and their exact difference, the isolating
metric, ≥ 3 trials per arm on one node, the command lines, and the `crossview ab` line that
records the verdict in the ledger. Commands and flags are data (synthesis.yaml)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from crossview.experiments import gates
from crossview.knowledge import synthesis as kb
from crossview.synthesis import command_arms
from crossview.synthesis.bundle import Bundle
from crossview.synthesis.ledger import Lever


@dataclass
class Plan:
    lever_id: str
    rank: int
    baseline: str
    variant: str
    diff: str
    metric: str
    metric_why: str
    trials: int
    commands: list[str]
    record: str
    notes: list[str]
    command_source: str = "none"  # the bundle file the captured command came from
    command_diff: list[str] | None = None  # baseline vs variant command line

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


class _Keep(dict):  # leave unknown {placeholders} visible instead of failing
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _fill(text: str, values: dict[str, str]) -> str:
    return kb.one_line(text).format_map(_Keep(values))


def plan(b: Bundle, lever: Lever, ledger_path: str) -> Plan:
    cfg = kb.table("experiments")
    engine = str(b.context.engine or "unknown").lower()
    regime = b.extra.get("regime", "")
    focus = cfg["focus_by_regime"].get(regime, cfg["default_focus"])
    metric = dict(cfg["metric"][focus])
    target = gates.target_of({"subject": lever.subject})
    if target is not None:  # the lever's own phase decides (the VERDICT gate checks it)
        lm = gates.table()["lever_metrics"][target]
        metric = {"name": lm["plan_metric"], "why": f"{target} lever: judged on {lm['words']}, "
                  "medians over ≥ 3 trials per arm (the VERDICT gate's metric)"}
    arms = kb.table("experiments")["arms"][lever.template]
    arm = arms.get(engine) or arms["default"]
    cmds = cfg["commands"].get(engine) or cfg["commands"]["default"]
    ctx = b.context.to_dict()
    notes = []
    values = {**{k: str(v) for k, v in ctx.items() if k != "metadata"}, **lever.subject,
              "lever_id": lever.id, "ledger": ledger_path,
              # the VERDICT gate needs both arms' node: recorded per trial, from the shell
              # when the bundle does not know it
              "node": str(b.context.hostname or b.extra.get("node") or "$(hostname)"),
              "gpu_uuids_cmd": "$(nvidia-smi --query-gpu=uuid --format=csv,noheader | "
                               "paste -sd, -)",
              "tokenizer": str(b.context.tokenizer or b.context.model or "unknown"),
              "command": kb.one_line(b.capture.get("command") or
                                     (b.command.text() if b.command else "") or
                                     "<the workload's launch command: not in bundle.yaml "
                                     "capture.command>")}
    src = ("bundle.yaml capture.command" if b.capture.get("command") else
           b.command.source if b.command else "none")
    argv = (shlex.split(str(b.capture["command"])) if b.capture.get("command") else
            b.command.argv if b.command else None)
    if (argv and not b.capture.get("command") and engine in cfg["commands"]
            and b.command.engine() != engine):
        notes.append(f"the captured command ({src}) does not run {engine}: the {engine} "
                     "template is used instead")
        argv, src = None, "none"
    values["result"] = str(cmds.get("result", "json"))
    if values["result"] == "csv":
        notes.append(f"write each trial's metrics (e.g. {metric['name']}) with `hostname` and "
                     "`gpu_uuids` columns (the VERDICT gate checks the node) as a `metric,value` "
                     "CSV named <arm>-t<N>.csv; those files are what `crossview ab` compares")
    missing = sorted(k for k in ("model", "isl", "osl", "concurrency", "num_prompts")
                     if values.get(k) in (None, "unknown"))
    if missing and engine in cfg["commands"]:
        notes.append("fill from the production config (unknown in bundle.yaml): "
                     + ", ".join(missing))
    if engine not in cfg["commands"]:
        notes.append(f"engine {engine!r}: no serving template in synthesis.yaml — each "
                     f"trial re-runs the captured command ({src}) with the arm's change "
                     "applied")
    commands = []
    trials = int(cfg["trials"])
    cdiff = None
    applied = command_arms.arms(argv, engine, lever.template) if argv else None
    if argv:
        cdiff = command_arms.diff(*(applied or (argv, argv)), _fill(arm["variant"], values))
        if b.command and src == b.command.source and b.command.wrapper:
            notes.append(f"the command is {src} without its profiler prefix "
                         f"(`{b.command.wrapper}`): trials run unprofiled")
    for i, name in enumerate(("baseline", "variant")):
        args = _fill(arm[name], values)
        v = {**values, "arm": name, "arm_args": args}
        if applied:
            v["command"] = shlex.join(applied[i])
        serve = _fill(cmds["serve"], v)
        if argv and engine in cfg["commands"]:  # the captured serve command, not a template
            serve = v["command"] if applied else f"{shlex.join(argv)}  # {name} arm: {args}"
        commands.append(serve)
        # one loop line per arm: the trials differ only in their number
        commands.append(f"for t in $(seq 1 {trials}); do "
                        + _fill(cmds["bench"], {**v, "trial": "$t"}) + "; done")
    notes.append(f"all {2 * trials} trials on the same node, arms interleaved, nothing else "
                 "changed")
    return Plan(lever.id, lever.rank, _fill(arm["baseline"], values),
                _fill(arm["variant"], values), _fill(arm["diff"], values), metric["name"],
                kb.one_line(metric["why"]), trials, commands,
                _fill(cfg["ab"], values), notes, src, cdiff)


def plans(b: Bundle, levers: list[Lever], ledger_path: str) -> list[Plan]:
    top = int(kb.table("ledger")["experiments_top"])
    draft = [lv for lv in levers if lv.confidence == "DRAFT"]
    # a lever with no predicted effect gets a plan too: only its A/B can size it
    return [plan(b, lv, ledger_path) for lv in draft[:top] + [
        lv for lv in draft[top:] if lv.effect is None]]
