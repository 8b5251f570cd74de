"""A GPU shared by several processes (or running a stress tool) is not judged as one workload.

metrics/nvidia-smi_h100_capture.txt's load section lists three compute processes on GPU 0
(`--query-compute-apps` CSV rows: pid, process_name, used_memory): ./gpu_burn 15,690 MiB and two
/root/tools/memhog (2,566 and 1,542 MiB), read here from the raw text independently of
crossview. The recap used to call the GPU "GPU-bound … the host keeps it fed and the kernels
set the pace"; it now names the processes, marks the stress tools, and says the counters
describe them together. Skips without ../shared/data."""

from __future__ import annotations

from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze
from crossview.render import markdown

SMI = SHARED_DATA / "metrics" / "nvidia-smi_h100_capture.txt"


def _raw_processes() -> list[tuple[str, float]]:
    out = []
    for line in shared_file(SMI).read_text().splitlines():
        f = [x.strip() for x in line.split(",")]
        # timestamp, name, pci.bus_id, serial, uuid, pid, process_name, used_memory
        if len(f) == 8 and f[5].isdigit() and f[7].endswith(" MiB"):
            out.append((f[6], float(f[7].removesuffix(" MiB"))))
    return sorted(set(out), key=lambda x: -x[1])


def test_processes_are_read_and_named() -> None:
    raw = _raw_processes()
    assert raw == [("./gpu_burn", 15690.0), ("/root/tools/memhog", 2566.0),
                   ("/root/tools/memhog", 1542.0)]
    a = analyze([shared_file(SMI)])
    (load,) = [d for d in a.views.gpu_metrics.devices if d.section == "load"]
    assert [(p.name, p.mem_mib) for p in load.processes] == raw
    assert all(p.synthetic for p in load.processes)
    text = markdown.render(a)
    assert "**GPU-bound**" not in text
    assert ("3 processes hold memory on it in this window (`./gpu_burn` 15,690 MiB (a synthetic "
            "stress load)") in text
