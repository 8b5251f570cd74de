"""The normalized tables: the one contract between readers and everything downstream.

Timestamps are integer nanoseconds everywhere. Ids are unique within one Store.
"""

from __future__ import annotations

TABLES: dict[str, str] = {
    "artifacts": """
        artifact_id INTEGER, path VARCHAR, kind VARCHAR, bytes BIGINT, status VARCHAR,
        problems VARCHAR[], rigor VARCHAR, events BIGINT,
        rank INTEGER, world_size INTEGER, backend VARCHAR, trace_base_ns BIGINT
    """,
    "devices": """
        artifact_id INTEGER, device INTEGER, name VARCHAR, sm_count INTEGER,
        mem_bytes BIGINT, cc_major INTEGER, cc_minor INTEGER
    """,
    # kind: kernel | memcpy | memset
    "gpu_ops": """
        artifact_id INTEGER, gpu_op_id BIGINT, device INTEGER, stream BIGINT, kind VARCHAR,
        name VARCHAR, family VARCHAR, start_ns BIGINT, dur_ns BIGINT, correlation BIGINT,
        launch_op_id BIGINT, via_graph BOOLEAN, bytes BIGINT, copy_kind VARCHAR,
        mem_kinds VARCHAR, grid VARCHAR, block VARCHAR, regs INTEGER, collective VARCHAR
    """,
    # kind: runtime | op | python | annotation | other; depth/parent from time containment
    "host_ops": """
        artifact_id INTEGER, op_id BIGINT, pid VARCHAR, tid VARCHAR, kind VARCHAR,
        name VARCHAR, start_ns BIGINT, dur_ns BIGINT, depth INTEGER, parent BIGINT,
        correlation BIGINT, node_id BIGINT, self_ns BIGINT
    """,
    # call-tree frames, interned: one row per distinct (parent_node, name) path step
    "frames": """
        node_id BIGINT, parent_node BIGINT, name VARCHAR, kind VARCHAR, depth INTEGER
    """,
}
