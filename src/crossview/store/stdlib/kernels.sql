-- One row per GPU kernel execution (gpu_ops of kind 'kernel'), over every artifact of the
-- store (the MCP `filter` narrows its filtered form f_kernels, not this view: here, filter
-- on artifact_id / device / start_ns in WHERE).
--
-- scope: gpu_ops
--
-- columns:
-- artifact_id  id     the capture it was read from (artifacts.artifact_id)
-- gpu_op_id    id     the kernel's id in the store (gpu_ops.gpu_op_id)
-- device       index  GPU index as the capture numbers it
-- stream       id     CUDA / HIP stream
-- name         text   the kernel's name as recorded
-- family       text   kernel family (gemm, attention, comm, elementwise, …; kernels/)
-- start_ns     ns     start on the trace clock
-- end_ns       ns     end on the trace clock (start_ns + dur_ns)
-- dur_ns       ns     duration
-- correlation  id     the runtime correlation id linking it to its launch call
-- launch_op_id id     the host_ops.op_id of its launch call; NULL when the call is not in
--                     the capture
-- via_graph    bool   launched as a node of a CUDA / HIP graph replay
-- grid         text   grid dimensions as recorded ("[x,y,z]")
-- block        text   block dimensions as recorded ("[x,y,z]")
-- regs         count  registers per thread
-- collective   text   the collective it runs (all_reduce, …); NULL for a compute kernel
SELECT artifact_id, gpu_op_id, device, stream, name, family, start_ns,
       start_ns + dur_ns AS end_ns, dur_ns, correlation, launch_op_id, via_graph, grid,
       block, regs, collective
FROM gpu_ops
WHERE kind = 'kernel'
