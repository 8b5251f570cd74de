"""CUPTI / nsys enum values the reader names (data, not logic).

Values are CUPTI's (`CUpti_ActivityMemcpyKind`, `CUpti_ActivityMemoryKind`,
`CUpti_ActivitySynchronizationType`) as the export's ENUM_* tables list them; the labels are
the ones Kineto prints ("Memcpy HtoD (Pageable -> Device)"), so names match across sources.
"""

from __future__ import annotations

COPY_KIND = {
    0: "Unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
    8: "DtoD", 9: "HtoH", 10: "PtoP", 11: "HtoD", 12: "DtoH", 13: "DtoD",  # 11–13: unified (UVM)
}
MEM_KIND = {
    0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed", 5: "Device Static",
    6: "Managed Static", 7: "Unknown",
}
SYNC_TYPE = {
    0: "Unknown sync", 1: "Event sync", 2: "Stream wait event", 3: "Stream sync",
    4: "Context sync",
}
# ENUM_NSYS_EVENT_TYPE: NVTX ranges that become host annotations
NVTX_PUSH_POP = 59
NVTX_START_END = 60
# CUPTI uses all-ones for "no stream" (context-wide synchronization)
NO_STREAM = 0xFFFFFFFF


def case_sql(column: str, mapping: dict[int, str], default: str = "Unknown") -> str:
    """A SQL CASE naming the integer ``column`` from ``mapping``."""
    whens = " ".join(f"WHEN {k} THEN '{v}'" for k, v in mapping.items())
    return f"CASE {column} {whens} ELSE '{default}' END"
