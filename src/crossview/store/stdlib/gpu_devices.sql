-- One row per GPU a file records properties of (a trace's device list, a counter file's
-- GPU name, …), with the file. Device indices are the file's own: the same index in two
-- files need not be the same board.
--
-- columns:
-- artifact_id     id       the file (input_files.artifact_id)
-- path            text     the file as given
-- device          index    GPU index as the file numbers it
-- name            text     the GPU's name as recorded; NULL or '' when not recorded
-- sm_count        count    streaming multiprocessors (compute units on AMD)
-- mem_bytes       bytes    device memory
-- cc_major        count    compute capability, major
-- cc_minor        count    compute capability, minor
-- mem_bw_bytes_s  bytes/s  memory bandwidth as recorded
-- clock_hz        value    SM clock as recorded, Hz
SELECT d.artifact_id, a.path, d.device, d.name, d.sm_count, d.mem_bytes, d.cc_major,
       d.cc_minor, d.mem_bw_bytes_s, d.clock_hz
FROM devices d
JOIN artifacts a ON a.artifact_id = d.artifact_id
