-- One row per GPU kernel with the host call that launched it and the host ops above that
-- call. The call is linked by correlation id (gpu_ops.launch_op_id = host_ops.op_id); above
-- it: the innermost framework op (kind 'op': aten::mm, …), the outermost one (what user
-- code called) and the innermost annotation (record_function / NVTX range). Kernels whose launch call is
-- not in the capture keep their row with NULL launch columns. Every artifact of the store.
--
-- scope: gpu_ops
--
-- columns:
-- artifact_id     id     the capture (artifacts.artifact_id)
-- gpu_op_id       id     the kernel (gpu_ops.gpu_op_id)
-- device          index  GPU index
-- stream          id     CUDA / HIP stream
-- kernel          text   the kernel's name
-- family          text   kernel family (kernels/)
-- start_ns        ns     kernel start on the trace clock
-- dur_ns          ns     kernel duration
-- via_graph       bool   launched as a node of a graph replay (launch_call is the graph
--                        launch)
-- launch_op_id    id     the launch call (host_ops.op_id); NULL: not in the capture
-- launch_call     text   the runtime / driver call (cudaLaunchKernel, cuLaunchKernelEx, …)
-- launch_start_ns ns     the launch call's start on the trace clock
-- launch_dur_ns   ns     the launch call's duration
-- launch_lag_ns   ns     kernel start − launch call start (queueing + launch latency)
-- pid             text   process of the launching thread
-- tid             text   launching thread
-- caller          text   the host op directly above the launch call (any kind)
-- launching_op    text   innermost framework op (kind 'op') above the launch call; NULL
--                        when none (nsys without framework ops, Triton from Python)
-- top_op          text   outermost framework op above the launch call (the op user code
--                        called, e.g. aten::linear above aten::addmm)
-- annotation      text   innermost annotation (record_function / NVTX range) above it
WITH RECURSIVE launch_nodes AS (
    SELECT DISTINCT node_id FROM host_ops WHERE kind = 'runtime' AND node_id IS NOT NULL
), up(node_id, above, dist) AS (
    SELECT l.node_id, f.parent_node, 1
    FROM launch_nodes l JOIN frames f ON f.node_id = l.node_id
    WHERE f.parent_node IS NOT NULL
    UNION ALL
    SELECT up.node_id, f.parent_node, up.dist + 1
    FROM up JOIN frames f ON f.node_id = up.above
    WHERE f.parent_node IS NOT NULL
), ancestry AS (
    SELECT up.node_id,
           arg_min(f.name, up.dist) AS caller,
           arg_min(f.name, up.dist) FILTER (WHERE f.kind = 'op') AS launching_op,
           arg_max(f.name, up.dist) FILTER (WHERE f.kind = 'op') AS top_op,
           arg_min(f.name, up.dist) FILTER (WHERE f.kind = 'annotation') AS annotation
    FROM up JOIN frames f ON f.node_id = up.above
    GROUP BY up.node_id
)
SELECT g.artifact_id, g.gpu_op_id, g.device, g.stream, g.name AS kernel, g.family,
       g.start_ns, g.dur_ns, g.via_graph, g.launch_op_id, h.name AS launch_call,
       h.start_ns AS launch_start_ns, h.dur_ns AS launch_dur_ns,
       g.start_ns - h.start_ns AS launch_lag_ns, h.pid, h.tid, a.caller, a.launching_op,
       a.top_op, a.annotation
FROM gpu_ops g
LEFT JOIN host_ops h ON h.op_id = g.launch_op_id AND h.artifact_id = g.artifact_id
LEFT JOIN ancestry a ON a.node_id = h.node_id
WHERE g.kind = 'kernel'
