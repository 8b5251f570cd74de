-- One row per framework op (host_ops of kind 'op') with the input shapes and types the
-- trace recorded (PyTorch profiler record_shapes=True: op_args). Ops recorded without
-- shapes keep their row with NULL shape columns. Every artifact of the store.
--
-- scope: host_ops
--
-- columns:
-- artifact_id      id     the capture (artifacts.artifact_id)
-- op_id            id     the op (host_ops.op_id)
-- name             text   the op's name (aten::mm, …)
-- pid              text   process
-- tid              text   thread
-- start_ns         ns     start on the trace clock
-- dur_ns           ns     inclusive host duration
-- self_ns          ns     host duration not covered by child events
-- depth            count  nesting depth on its thread
-- node_id          id     its call-tree path (frames.node_id): equal paths share a node
-- input_dims       json   `Input Dims` as recorded (JSON list of shapes)
-- input_types      json   `Input type` as recorded (JSON list)
-- concrete_inputs  json   `Concrete Inputs` as recorded (JSON list)
SELECT h.artifact_id, h.op_id, h.name, h.pid, h.tid, h.start_ns, h.dur_ns, h.self_ns,
       h.depth, h.node_id, x.input_dims, x.input_types, x.concrete_inputs
FROM host_ops h
LEFT JOIN op_args x ON x.op_id = h.op_id AND x.artifact_id = h.artifact_id AND NOT x.on_gpu
WHERE h.kind = 'op'
