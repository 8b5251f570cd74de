-- GPU counter samples per device from DCGM, NVML and nvidia-smi (metrics rows of those
-- sources), units normalized by the readers (knowledge/gpu_metrics.yaml). One row per
-- sample.
--
-- columns:
-- artifact_id  id       the file it was read from (artifacts.artifact_id)
-- source       text     dcgm-exporter | dcgmi | nvidia-smi | nvml
-- device       index    GPU index; NULL when the sample names none
-- metric       text     canonical metric name (raw_name: as recorded)
-- ts_ns        ns       sample time, UTC epoch ns; NULL when the file has no clock
-- seq          count    sample order within the file (orders samples without a clock)
-- value        value    the sample, in `unit`
-- unit         text     the value's unit (%, W, byte, hz, …)
-- mtype        text     gauge | counter | info | untyped
-- labels       json     the sample's labels (JSON object text)
-- raw_name     text     the metric's name as recorded
SELECT artifact_id, source, device, metric, ts_ns, seq, value, unit, mtype, labels, raw_name
FROM metrics
WHERE source IN ('dcgm-exporter', 'dcgmi', 'nvidia-smi', 'nvml')
