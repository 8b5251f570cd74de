"""Every knowledge YAML decodes strictly through its msgspec schema (knowledge/schemas.py): a
typo'd key, a missing key or a string where a number goes fails at load, one line naming the
file and the key path."""

from __future__ import annotations

import re
import time
from importlib import resources
from pathlib import Path

import pytest

from crossview.knowledge import loader
from crossview.knowledge.schemas import SCHEMAS
from crossview.knowledge.thresholds_schema import Thresholds

KNOWLEDGE = Path(str(resources.files("crossview.knowledge")))
THRESHOLDS = (KNOWLEDGE / "thresholds.yaml").read_text(encoding="utf-8")


def test_every_knowledge_yaml_has_a_schema_and_passes_it() -> None:
    files = sorted(p.name for p in KNOWLEDGE.glob("*.yaml"))
    assert files == sorted(SCHEMAS), "a knowledge YAML without a schema (or a stale entry)"
    for name in files:
        loader.load_typed(name)  # raises KnowledgeError on any mismatch


def _edited(tmp_path: Path, old: str, new: str) -> Path:
    assert THRESHOLDS.count(old) == 1, old
    p = tmp_path / "thresholds.yaml"
    p.write_text(THRESHOLDS.replace(old, new), encoding="utf-8")
    return p


def test_a_typod_threshold_key_fails_naming_file_and_key(tmp_path: Path) -> None:
    p = _edited(tmp_path, "\nsync_red_share: 0.20\n", "\nsync_red_shar: 0.20\n")
    with pytest.raises(loader.KnowledgeError) as e:
        loader.load_file(p, Thresholds)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg == f"{p}: Object contains unknown field `sync_red_shar`", msg


def test_a_string_where_a_number_goes_fails_naming_file_and_key(tmp_path: Path) -> None:
    p = _edited(tmp_path, "\ncounters_starved_util_pct: 60\n",
                '\ncounters_starved_util_pct: "60"\n')
    with pytest.raises(loader.KnowledgeError) as e:
        loader.load_file(p, Thresholds)
    assert str(e.value) == (f"{p}: Expected `float`, got `str` - at "
                            "`$.counters_starved_util_pct`"), str(e.value)


def test_a_missing_threshold_key_fails_naming_it(tmp_path: Path) -> None:
    p = _edited(tmp_path, "\nmax_yellow: 2\n", "\n")
    with pytest.raises(loader.KnowledgeError, match=r"missing required field `max_yellow`"):
        loader.load_file(p, Thresholds)


def test_a_bad_entry_of_a_keyed_table_names_its_key(tmp_path: Path) -> None:
    """msgspec writes a table key as `[...]`; the loader names it (here the GPU)."""
    text = (KNOWLEDGE / "sol_ceilings.yaml").read_text(encoding="utf-8")
    m = re.search(r"^h200-sxm:\n(?:  .*\n)*?  hbm_tb_s: ([0-9.]+)\n", text, re.M)
    assert m, "h200-sxm entry with hbm_tb_s"
    p = tmp_path / "sol_ceilings.yaml"
    p.write_text(text[:m.start(1)] + '"' + m.group(1) + '"' + text[m.end(1):], encoding="utf-8")
    with pytest.raises(loader.KnowledgeError) as e:
        loader.load_file(p, SCHEMAS["sol_ceilings.yaml"])
    assert str(e.value) == f"{p}: Expected `float`, got `str` - at `$.h200-sxm.hbm_tb_s`"


def test_loads_are_cached_and_cheap() -> None:
    """Checked once per process: a second load is the cached object; the first check of all
    files stays small next to an analyze run (measured here, loose bound for a loaded box)."""
    assert loader.load_typed("thresholds.yaml") is loader.load_typed("thresholds.yaml")
    t0 = time.perf_counter()
    for name, schema in SCHEMAS.items():
        loader.check(loader.load_yaml(name), schema, name)
    assert time.perf_counter() - t0 < 1.0
