-- Serving-engine metric samples (vLLM, SGLang, Triton, Dynamo, other Prometheus
-- endpoints), units normalized by the readers (knowledge/serving_metrics.yaml). A histogram
-- is its bucket rows (labels.le) + sum + count rows. One row per sample.
--
-- columns:
-- artifact_id  id     the file it was read from (artifacts.artifact_id)
-- source       text   vllm | sglang | triton | dynamo | prometheus
-- metric       text   canonical metric name (raw_name: as recorded)
-- mtype        text   gauge | counter | bucket | sum | count | info | untyped
-- ts_ns        ns     sample time, UTC epoch ns; NULL when the file has no clock
-- seq          count  sample order within the file
-- value        value  the sample, in `unit`
-- unit         text   the value's unit (s, token, request, …)
-- le           text   a bucket row's upper bound (labels.le); NULL for other rows
-- labels       json   the sample's labels (JSON object text)
-- raw_name     text   the metric's name as recorded
SELECT artifact_id, source, metric, mtype, ts_ns, seq, value, unit,
       json_extract_string(labels, '$.le') AS le, labels, raw_name
FROM metrics
WHERE source IN ('vllm', 'sglang', 'triton', 'dynamo', 'prometheus')
