-- One row per communication kernel (family 'comm': NCCL / RCCL / symmetric memory, or a
-- kernel the trace names a collective) with what the trace recorded about it (collective,
-- message sizes, group) and its rank. Every artifact. The collective's type as crossview
-- aligns ranks by it (from the launching op, else the kernel name: knowledge/
-- collectives.yaml) is not derived here: older traces record no `collective`.
--
-- scope: gpu_ops
--
-- columns:
-- artifact_id    id     the capture (artifacts.artifact_id)
-- rank           index  the capture's rank (artifacts.rank); NULL when not recorded
-- world_size     count  ranks in the job (artifacts.world_size)
-- gpu_op_id      id     the kernel (gpu_ops.gpu_op_id)
-- device         index  GPU index
-- stream         id     stream it ran on
-- collective     text   the collective as recorded (all_reduce, allgather, …); NULL when
--                       the trace does not say (the kernel name usually does)
-- process_group  text   the process group as recorded
-- coll_seq       count  the collective's sequence number in its group, when recorded
-- name           text   the kernel's name
-- start_ns       ns     start on the trace clock
-- end_ns         ns     end on the trace clock
-- dur_ns         ns     duration (transfer + any wait for peers)
-- family         text   the kernel family (comm, or another when only the trace's
--                       `collective` marks it)
-- in_nelems      count  input message elements (Kineto `In msg nelems`)
-- out_nelems     count  output message elements (`Out msg nelems`)
-- group_size     count  ranks in the collective's group (`Group size`)
-- dtype          text   element type as recorded
SELECT g.artifact_id, a.rank, a.world_size, g.gpu_op_id, g.device, g.stream, g.collective,
       g.process_group, g.coll_seq, g.name, g.start_ns, g.start_ns + g.dur_ns AS end_ns,
       g.dur_ns, g.family, x.in_nelems, x.out_nelems, x.group_size, x.dtype
FROM gpu_ops g
JOIN artifacts a ON a.artifact_id = g.artifact_id
LEFT JOIN op_args x ON x.op_id = g.gpu_op_id AND x.artifact_id = g.artifact_id AND x.on_gpu
WHERE g.kind = 'kernel' AND (g.family = 'comm' OR g.collective IS NOT NULL)
