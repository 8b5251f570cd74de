-- One row per GPU memory copy or memset (gpu_ops of kind memcpy / memset) with the host
-- call that launched it. Every artifact of the store.
--
-- scope: gpu_ops
--
-- columns:
-- artifact_id   id       the capture (artifacts.artifact_id)
-- gpu_op_id     id       the copy (gpu_ops.gpu_op_id)
-- device        index    GPU index
-- stream        id       stream it ran on
-- kind          text     memcpy | memset
-- copy_kind     text     direction as recorded (HtoD, DtoH, DtoD, PtoP, …)
-- mem_kinds     text     source / destination memory kinds as recorded (Pageable, Device…)
-- bytes         bytes    bytes moved or set
-- start_ns      ns       start on the trace clock
-- end_ns        ns       end on the trace clock
-- dur_ns        ns       duration
-- bytes_per_s   bytes/s  bytes / duration; NULL when either is missing or zero
-- launch_op_id  id       the launch call (host_ops.op_id); NULL: not in the capture
-- launch_call   text     the runtime call (cudaMemcpyAsync, …)
-- caller        text     the host op directly above the launch call
SELECT g.artifact_id, g.gpu_op_id, g.device, g.stream, g.kind, g.copy_kind, g.mem_kinds,
       g.bytes, g.start_ns, g.start_ns + g.dur_ns AS end_ns, g.dur_ns,
       CASE WHEN g.dur_ns > 0 AND g.bytes > 0 THEN g.bytes * 1e9 / g.dur_ns END
           AS bytes_per_s,
       g.launch_op_id, h.name AS launch_call, p.name AS caller
FROM gpu_ops g
LEFT JOIN host_ops h ON h.op_id = g.launch_op_id AND h.artifact_id = g.artifact_id
LEFT JOIN host_ops p ON p.op_id = h.parent AND p.artifact_id = h.artifact_id
WHERE g.kind IN ('memcpy', 'memset')
