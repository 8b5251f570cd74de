-- One row per host event (framework op, runtime call, Python frame, annotation) with its
-- parent: the tree by time containment on its thread, as the readers nest it. Every
-- artifact of the store.
--
-- scope: host_ops
--
-- columns:
-- artifact_id  id     the capture (artifacts.artifact_id)
-- op_id        id     the event (host_ops.op_id)
-- parent_id    id     the enclosing event's op_id; NULL at a root
-- parent_name  text   the enclosing event's name; NULL at a root
-- depth        count  nesting depth (0 at a root)
-- pid          text   process
-- tid          text   thread
-- kind         text   runtime | op | python | annotation | other
-- name         text   the event's name as recorded
-- start_ns     ns     start on the trace clock
-- end_ns       ns     end on the trace clock (start_ns + dur_ns)
-- dur_ns       ns     inclusive duration
-- self_ns      ns     duration not covered by child events
-- correlation  id     runtime correlation id (launch calls); NULL otherwise
-- node_id      id     its call-tree path (frames.node_id): equal paths share a node
SELECT h.artifact_id, h.op_id, h.parent AS parent_id, p.name AS parent_name, h.depth,
       h.pid, h.tid, h.kind, h.name, h.start_ns, h.start_ns + h.dur_ns AS end_ns,
       h.dur_ns, h.self_ns, h.correlation, h.node_id
FROM host_ops h
LEFT JOIN host_ops p ON p.op_id = h.parent AND p.artifact_id = h.artifact_id
