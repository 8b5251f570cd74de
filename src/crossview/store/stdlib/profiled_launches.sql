-- One row per kernel launch Nsight Compute profiled (sources/ncu): the kernel, where it ran
-- and the device ncu saw. Its counters are in the ncu report's metrics (sol/roofline.py
-- merges the exports of one launch by launch_key).
--
-- columns:
-- artifact_id         id     the ncu export (input_files.artifact_id)
-- kernel_id           id     the launch's id in the store
-- ncu_id              text   ncu's own launch id as printed
-- launch_key          text   names the launch across exports of one ncu session
-- name                text   the kernel's name as ncu printed it
-- family              text   kernel family (gemm, attention, …; kernels/)
-- process             text   the profiled process's name
-- pid                 text   its process id
-- host                text   the machine's name (ncu `Host Name`)
-- device              index  GPU index
-- device_name         text   the GPU's name
-- device_name_source  text   capture (ncu recorded it) | --gpu | bundle.yaml (named by
--                            the user)
-- cc                  text   compute capability ("9.0")
-- sm_count            count  streaming multiprocessors
-- mem_bytes           bytes  device memory
-- context             text   CUDA context as recorded
-- stream              id     stream it ran on
-- grid                text   grid dimensions as recorded
-- block               text   block dimensions as recorded
SELECT artifact_id, kernel_id, ncu_id, launch_key, name, family, process, pid, host, device,
       device_name, device_name_source, cc, sm_count, mem_bytes, context, stream, grid, block
FROM profiled_kernels
