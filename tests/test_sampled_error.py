"""A sampled CPU profile whose stacks run through the runtime's report of an uncaught error
leads with the error (real jacc_a100_cpu_sampling_nsys2026.2 export, a Julia process). 106
samples' callchains hold `julia_display_error_47730` (counted here with sqlite3 from
SAMPLING_CALLCHAINS + StringIds): the script threw and Julia printed the error after loading
and compiling. The recap told the engineer to "capture the steady state"; the first change is
to make the run succeed. Skips without ../shared/data."""

from __future__ import annotations

import sqlite3

from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze
from crossview.render import markdown

JACC = SHARED_DATA / "nsys" / "jacc_a100_cpu_sampling_nsys2026.2.sqlite"


def test_uncaught_error_leads_the_recap() -> None:
    with sqlite3.connect(shared_file(JACC)) as db:
        (n,) = db.execute(
            "SELECT count(DISTINCT c.id) FROM SAMPLING_CALLCHAINS c JOIN StringIds s"
            " ON s.id = c.symbol WHERE s.value = 'julia_display_error_47730'").fetchone()
    assert n == 106
    a = analyze([JACC])
    rt = a.views.sampled_runtime
    assert rt is not None
    err = rt.share("error_exit")
    assert err is not None and err.samples == n
    f = next(f for f in a.findings if f.pattern == "capture-window" and f.severity == "red")
    assert f.title.startswith("The run reports an uncaught error (`julia_display_error_47730`)")
    assert f.fix.startswith("First make the run succeed")
    assert "fix the error first" in markdown.render(a)
