"""Self-contained HTML report: the recap plus interactive panels (flamegraphs, timeline,
roofline). Formats only: every number comes from `Views` or from the inputs' own JSON.

`render(a, extras)` returns one HTML document with its CSS, JS and data inlined (no network at
view time). Text parts are server-rendered HTML; JS (assets/report.js) only draws and adds
interaction.
"""

from crossview.render.html.page import Extras, render

__all__ = ["Extras", "render"]
