-- One row per stretch of time a GPU runs no kernel between two kernels: the holes of the
-- kernel union per (artifact, device), all streams together. Copies (memcpy / memset) do
-- not fill a gap (the time account counts them as idle: blocking_copy). Time before a
-- device's first kernel and after its last is not a gap here. No cause: crossview's causes
-- come from its time account (the `step_idle` relation of MCP `query`).
--
-- scope: gpu_ops
--
-- columns:
-- artifact_id      id     the capture (artifacts.artifact_id)
-- device           index  GPU index
-- start_ns         ns     gap start: the latest end of the kernels before it
-- end_ns           ns     gap end: the next kernel's start
-- dur_ns           ns     gap length (end_ns − start_ns)
-- next_gpu_op_id   id     the kernel that ends the gap (gpu_ops.gpu_op_id)
-- next_kernel      text   its name
-- next_launch_op_id id    its launch call (host_ops.op_id); NULL: not in the capture
WITH k AS (
    SELECT artifact_id, device, gpu_op_id, name, launch_op_id, start_ns,
           max(start_ns + dur_ns) OVER (
               PARTITION BY artifact_id, device ORDER BY start_ns, start_ns + dur_ns,
               gpu_op_id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS busy_until
    FROM gpu_ops
    WHERE kind = 'kernel'
)
SELECT artifact_id, device, busy_until AS start_ns, start_ns AS end_ns,
       start_ns - busy_until AS dur_ns, gpu_op_id AS next_gpu_op_id, name AS next_kernel,
       launch_op_id AS next_launch_op_id
FROM k
WHERE start_ns > busy_until
