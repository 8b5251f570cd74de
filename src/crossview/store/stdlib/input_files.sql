-- One row per file read into the store (a trace, a counter series, a benchmark result, an
-- Nsight Compute export, …) with the run metadata its reader recorded: what it is, whether
-- it was read, its rank, and the driver it ran under. Every other view's artifact_id names
-- a row here; its path is how crossview cites the file.
--
-- columns:
-- artifact_id     id     the file's id in the store (artifacts.artifact_id)
-- path            text   the file as given
-- kind            text   the format its reader took it for (kineto, nsys, ncu, dcgm, …)
-- status          text   ok (read in whole or in part: its rows are read) | empty |
--                        unreadable | …
-- rigor           text   L1 (stack samples) … L4 (kernel counters), bench: what its numbers
--                        can say
-- events          count  events or rows read
-- rank            index  the rank of a distributed job the trace records; NULL when none
-- world_size      count  ranks in that job; NULL when not recorded
-- backend         text   the job's communication backend (nccl, …) as recorded
-- driver_cuda     count  the CUDA version the GPU driver supports, 1000 × major + 10 ×
--                        minor; NULL when the file does not say
-- clock_epoch_ns  ns     UTC epoch ns of the trace's time 0; NULL when the file does not say
SELECT artifact_id, path, kind, status, rigor, events, rank, world_size, backend,
       driver_cuda, clock_epoch_ns
FROM artifacts
