"""Names an nsys export could not resolve (issue 43): a kernel, API call or range whose
string id is missing from StringIds is stored as "(name id N)" (gpu.py, host.py) — the numbers
stay right, but a recap that names them silently would send the user after "(name id 70)".
Counted after the read and said as one problem of the artifact."""

from __future__ import annotations

from crossview.store.store import Store

UNRESOLVED = "(name id "  # the prefix gpu.py and host.py give a name StringIds lacks


def unresolved(store: Store, artifact_id: int) -> list[str]:
    parts = []
    for table, what in (("gpu_ops", "GPU op(s)"), ("host_ops", "host call(s) and range(s)")):
        bad, total = store.sql(
            f"SELECT count(*) FILTER (WHERE starts_with(name, $p)), count(*) FROM {table}"
            " WHERE artifact_id = $a", {"a": artifact_id, "p": UNRESOLVED}).fetchall()[0]
        if bad:
            parts.append(f"{bad:,} of {total:,} {what}")
    if not parts:
        return []
    return [" and ".join(parts) + " name a string id missing from StringIds (an export "
            "damaged or cut): they are shown as “(name id N)”"]
