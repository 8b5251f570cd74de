-- One row per time-series sample of any source: GPU counters (DCGM, NVML, nvidia-smi:
-- also `device_counters`), serving-engine metrics (also `serving_metrics`), host CPU
-- samples (source host), other Prometheus endpoints. Units normalized by the readers
-- (knowledge/gpu_metrics.yaml, serving_metrics.yaml, host_metrics.yaml).
--
-- columns:
-- artifact_id  id     the file it was read from (input_files.artifact_id)
-- source       text   dcgm-exporter | dcgmi | nvidia-smi | nvml | host | vllm | sglang |
--                     triton | dynamo | prometheus
-- device       index  GPU index; NULL when the sample names none (host, serving)
-- metric       text   canonical metric name (raw_name: as recorded)
-- ts_ns        ns     sample time, UTC epoch ns; NULL when the file has no clock
-- seq          count  sample order within the file (one tick of a sampler shares it)
-- value        value  the sample, in `unit`
-- unit         text   the value's unit (%, W, byte, s, …)
-- mtype        text   gauge | counter | bucket | sum | count | info | untyped
-- labels       json   the sample's labels (JSON object text)
-- raw_name     text   the metric's name as recorded
SELECT artifact_id, source, device, metric, ts_ns, seq, value, unit, mtype, labels, raw_name
FROM metrics
