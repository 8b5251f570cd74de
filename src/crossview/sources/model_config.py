"""Load and validate a Hugging Face `config.json` into the shape numbers the LLM speed-of-light
calculator needs (dense and MoE decoder-only transformers with a gated MLP).

A model is a path to a config.json or the name of one shipped under knowledge/models/
(e.g. "Llama-3.1-8B", also matched from a served name like "meta-llama/Llama-3.1-8B-Instruct").
A config missing a required field raises one InputError naming every missing field.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from crossview.errors import InputError
from crossview.sources import guard

REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
            "vocab_size")
# HF names for the MoE expert count differ per family: Mixtral num_local_experts, Qwen-MoE
# num_experts, DeepSeek n_routed_experts
_EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")
# served-name suffixes that do not change the weights' shape
_VARIANT_SUFFIXES = ("-instruct", "-chat", "-it", "-base")


@dataclass(frozen=True)
class ModelShape:
    name: str
    source: str  # file read (and the upstream repo when the shipped config names it)
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int  # dense MLP width (unused when every layer is MoE)
    vocab: int
    tied_embeddings: bool
    experts: int = 0  # routed experts per layer; 0 = dense
    experts_per_tok: int = 0
    expert_intermediate: int = 0
    shared_intermediate: int = 0  # total width of always-on shared experts per layer
    # sliding-window attention (config `layer_types` naming "sliding_attention" layers): those
    # layers attend to the last `sliding_window` tokens only (gpt-oss: every other layer, 128)
    sliding_window: int = 0
    sliding_layers: int = 0

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def shipped() -> dict[str, Path]:
    """Configs shipped as data: name (file stem) → path."""
    root = resources.files("crossview.knowledge").joinpath("models")
    return {Path(p.name).stem: Path(str(p)) for p in root.iterdir() if p.name.endswith(".json")}


def _by_name(name: str) -> Path | None:
    want = name.rsplit("/", 1)[-1].lower()
    for suffix in _VARIANT_SUFFIXES:
        if want.endswith(suffix):
            want = want[: -len(suffix)]
    for stem, path in shipped().items():
        if stem.lower() == want:
            return path
    return None


def resolve(model: str) -> Path:
    """The config file for a path or a shipped model name."""
    p = Path(model)
    if p.is_file():
        return guard.check_open(p)  # inside the MCP roots when served (issue 18)
    found = _by_name(model)
    if found is None:
        raise InputError(model, "not a config.json file and not a shipped model (shipped: "
                         + ", ".join(sorted(shipped())) + ")", "unsupported")
    return found


def _int(d: dict[str, Any], key: str, path: Path) -> int:
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        # the value's kind, never the value: an error must not echo a file's contents
        raise InputError(path, f"config field {key}: expected a positive integer, got "
                         f"{'a boolean' if isinstance(v, bool) else 'a ' + type(v).__name__}"
                         + (" ≤ 0" if isinstance(v, int) and not isinstance(v, bool) else ""))
    return v


def parse(d: dict[str, Any], path: Path, name: str) -> ModelShape:
    if not isinstance(d, dict):
        raise InputError(path, "config.json is not a JSON object")
    text_cfg = d.get("text_config")  # multimodal wrappers keep the LM shape here
    if isinstance(text_cfg, dict) and "hidden_size" not in d:
        d = text_cfg
    expert_key = next((k for k in _EXPERT_KEYS if d.get(k)), None)
    missing = [k for k in REQUIRED if d.get(k) is None]
    if expert_key and d.get("num_experts_per_tok") is None:
        missing.append("num_experts_per_tok")
    if missing:
        raise InputError(path, "config.json lacks required field(s): " + ", ".join(missing))
    hidden, heads = _int(d, "hidden_size", path), _int(d, "num_attention_heads", path)
    head_dim = _int(d, "head_dim", path) if d.get("head_dim") else hidden // heads
    kv = _int(d, "num_key_value_heads", path) if d.get("num_key_value_heads") else heads
    experts = _int(d, expert_key, path) if expert_key else 0
    per_tok = _int(d, "num_experts_per_tok", path) if expert_key else 0
    inter = _int(d, "intermediate_size", path)
    expert_inter = _int(d, "moe_intermediate_size", path) if d.get("moe_intermediate_size") \
        else inter  # Mixtral: each expert has the dense width
    shared = 0
    if d.get("shared_expert_intermediate_size"):  # Qwen2-MoE: one shared expert
        shared = _int(d, "shared_expert_intermediate_size", path)
    elif d.get("n_shared_experts"):  # DeepSeek: n shared experts of the routed width
        shared = _int(d, "n_shared_experts", path) * expert_inter
    source = str(path) + (f" ({d['_source']})" if d.get("_source") else "")
    # only an explicit per-layer list says which layers slide (a Qwen2 config carries a
    # sliding_window with use_sliding_window false)
    types = d.get("layer_types")
    sliding = sum(1 for x in types if "sliding" in str(x)) if isinstance(types, list) else 0
    window = _int(d, "sliding_window", path) if sliding and d.get("sliding_window") else 0
    return ModelShape(name=name, source=source, hidden=hidden,
                      layers=_int(d, "num_hidden_layers", path), heads=heads, kv_heads=kv,
                      head_dim=head_dim, intermediate=inter, vocab=_int(d, "vocab_size", path),
                      tied_embeddings=bool(d.get("tie_word_embeddings", False)),
                      experts=experts, experts_per_tok=per_tok,
                      expert_intermediate=expert_inter if experts else 0,
                      shared_intermediate=shared, sliding_window=window,
                      sliding_layers=sliding if window else 0)


def load(model: str) -> ModelShape:
    """Read and validate a config.json (path or shipped name); InputError on bad input."""
    path = resolve(model)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(path, f"cannot read: {e}") from None
    except json.JSONDecodeError as e:
        raise InputError(path, f"not valid JSON (line {e.lineno}: {e.msg})") from None
    except RecursionError:
        raise InputError(path, "JSON nested too deeply to read") from None
    name = path.stem if path.parent.name == "models" else model
    return parse(data, path, name)
