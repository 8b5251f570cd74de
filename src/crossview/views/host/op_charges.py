"""What the per-op roofline (sol/op_roofline.py) reads of a capture under the filter: the
kernels' time, whether shapes are recorded, the GPUs, and each kernel charged to the
innermost host op above its launch call that has a cost model (opmodels), with that op's
recorded inputs (op_args: `Input Dims`, `Input type`, `Concrete Inputs`), aggregated per
distinct (op, recorded inputs, artifact, device): a trace repeats few distinct shapes many
times, so sol costs distinct keys, not calls."""

from __future__ import annotations

from crossview import opmodels
from crossview.sol.op_roofline import (
    CONV_BWD,
    MODULE_PREFIX,
    Charges,
    OpRooflineInputs,
    limits,
)
from crossview.store.store import Store
from crossview.views import captures
from crossview.views.host import host_names

_CHARGE_SQL = """
WITH RECURSIVE up(gpu_op_id, cur, d) AS (
    SELECT g.gpu_op_id, h.parent, 0
    FROM f_gpu g JOIN host_ops h ON h.op_id = g.launch_op_id
    WHERE g.kind = 'kernel'
    UNION ALL
    SELECT u.gpu_op_id, h.parent, u.d + 1
    FROM up u JOIN host_ops h ON h.op_id = u.cur
    WHERE h.name NOT IN (SELECT unnest($names)) AND h.parent IS NOT NULL AND u.d < 64
)
SELECT u.gpu_op_id, u.cur
FROM up u JOIN host_ops h ON h.op_id = u.cur
WHERE h.name IN (SELECT unnest($names))
"""

# one row per charged kernel: the op, its recorded inputs, the kernel, the op's parent and
# call-tree node
_OPK_SQL = """
SELECT h.op_id, h.name AS op, a.input_dims AS d, a.input_types AS t,
       a.concrete_inputs AS c, g.artifact_id AS art, g.device AS dev,
       g.name AS kname, g.dur_ns, p.name AS parent, h.node_id AS node,
       g.gpu_op_id AS gid
FROM _charge ch JOIN f_gpu g ON g.gpu_op_id = ch.gpu_op_id
JOIN host_ops h ON h.op_id = ch.cur
LEFT JOIN host_ops p ON p.op_id = h.parent
LEFT JOIN op_args a ON a.op_id = h.op_id AND NOT a.on_gpu
"""

# The nearest `nn.Module: Class_N` frame (profile(with_modules=True)) above each charged op's
# call-tree node, by kernel time per key
_MODULES_SQL = f"""
WITH RECURSIVE up(node, cur, d) AS (
    SELECT DISTINCT node, node, 0 FROM _opk WHERE node IS NOT NULL
    UNION ALL
    SELECT u.node, f.parent_node, u.d + 1 FROM up u JOIN frames f ON f.node_id = u.cur
    WHERE NOT starts_with(f.name, '{MODULE_PREFIX}') AND f.parent_node IS NOT NULL
      AND u.d < 256
)
SELECT o.op, o.d, o.t, o.c, o.art, o.dev, f.name, sum(o.dur_ns)
FROM up u JOIN frames f ON f.node_id = u.cur AND starts_with(f.name, '{MODULE_PREFIX}')
JOIN _opk o ON o.node = u.node
GROUP BY ALL ORDER BY ALL
"""

# kernels under no charged op: named by the op that launched them (innermost op above the
# runtime call); communication kernels left out
_UNCHARGED_SQL = """
SELECT coalesce(p.name, CASE WHEN g.launch_op_id IS NULL
       THEN '(launching call not in the trace)' ELSE '(launch outside any op)' END),
       sum(g.dur_ns)
FROM f_gpu g LEFT JOIN host_ops r ON r.op_id = g.launch_op_id
LEFT JOIN host_ops p ON p.op_id = r.parent
WHERE g.kind = 'kernel' AND g.family <> 'comm'
  AND g.gpu_op_id NOT IN (SELECT gpu_op_id FROM _charge)
GROUP BY 1
"""


def read(store: Store) -> OpRooflineInputs:
    """What sol/op_roofline.compute needs, read only as far as it goes: nothing more without
    kernels, the GEMM kernels by name without recorded shapes, the charges with them."""
    kernel_ns, n_kernels = store.sql(
        "SELECT coalesce(sum(dur_ns), 0), count(*) FROM f_kernels").fetchall()[0]
    arts = captures.gpu_artifacts(store)
    shapes = shapes_recorded(store, arts)
    if not n_kernels:
        return OpRooflineInputs(0, 0, shapes)
    devices = captures.devices(store, in_scope=True)
    training = host_names.any_contains(store, arts, limits()["training_op_markers"])
    if not shapes:
        gemms = [(int(a), d, str(n), int(ns)) for a, d, n, ns in store.sql(
            "SELECT artifact_id, device, name, sum(dur_ns) FROM f_kernels WHERE family = 'gemm'"
            " GROUP BY ALL").fetchall()]
        return OpRooflineInputs(int(kernel_ns), int(n_kernels), False, devices, training,
                                gemm_kernels=gemms)
    charges = charge(store, opmodels.modeled(op_names(store, arts)))
    conv = store.sql(
        "SELECT DISTINCT name, input_dims FROM ops_with_shapes WHERE name IN"
        " (SELECT unnest($n)) AND artifact_id IN (SELECT unnest($a))",
        {"n": list(CONV_BWD), "a": arts}).fetchall()
    return OpRooflineInputs(int(kernel_ns), int(n_kernels), True, devices, training,
                            charges=charges, conv_backward=conv)


def shapes_recorded(store: Store, artifacts: list[int]) -> bool:
    """Whether a host event of `artifacts` has its input shapes recorded (record_shapes=True):
    op_args read directly (the ops_with_shapes view answers the same for framework ops, 2 ms
    slower on a trace with shapes: its join with host_ops)."""
    return bool(store.sql(
        "SELECT count(*) FROM op_args WHERE NOT on_gpu AND input_dims IS NOT NULL AND"
        " artifact_id IN (SELECT unnest($a))", {"a": artifacts}).fetchall()[0][0])


def op_names(store: Store, artifacts: list[int]) -> list[str]:
    """The distinct framework op names (host_ops of kind 'op', the whole capture) of
    `artifacts`: what a charge may name (the ops_with_shapes view holds the same names, at
    the cost of its join with op_args)."""
    return [str(n) for (n,) in store.sql(
        "SELECT DISTINCT name FROM host_ops WHERE kind = 'op' AND artifact_id IN"
        " (SELECT unnest($a))", {"a": artifacts}).fetchall()]


def charge(store: Store, names: list[str]) -> Charges:
    """The kernels under the filter (f_gpu) charged to the ops named `names`."""
    store.sql("CREATE OR REPLACE TEMP TABLE _charge AS " + _CHARGE_SQL, {"names": names})
    store.sql("CREATE OR REPLACE TEMP TABLE _opk AS " + _OPK_SQL)
    keys = "op, d, t, c, art, dev"
    groups = store.sql(f"SELECT {keys}, count(DISTINCT op_id), count(*), sum(dur_ns)"
                       " FROM _opk GROUP BY ALL ORDER BY ALL").fetchall()
    by_kernel = store.sql(f"SELECT {keys}, kname, sum(dur_ns) FROM _opk GROUP BY ALL"
                          " ORDER BY ALL").fetchall()
    by_parent = store.sql(f"SELECT {keys}, parent, sum(dur_ns) FROM _opk WHERE parent IS NOT"
                          " NULL GROUP BY ALL ORDER BY ALL").fetchall()
    by_module = store.sql(_MODULES_SQL).fetchall()
    by_ids = store.sql(f"SELECT {keys}, list(gid ORDER BY gid) FROM _opk"
                       " GROUP BY ALL ORDER BY ALL").fetchall()
    store.sql("DROP TABLE _opk")
    uncharged = [(str(n), int(ns)) for n, ns in store.sql(_UNCHARGED_SQL).fetchall()]
    store.sql("DROP TABLE _charge")
    return Charges(groups, by_kernel, by_parent, by_module, by_ids, uncharged)
