"""Hardware ceilings (sol_ceilings.yaml) and device-name matching (hw_names.yaml).

Names are spelled exactly as each source writes them; those marked "real" were read from the
captures in ../shared/data (Kineto deviceProperties, nsys TARGET_INFO_GPU, ncu device
attributes, dcgm-exporter modelName, nvidia-smi), the rest from the vendors' tools as
documented. Ceiling values are checked against the datasheet figures quoted in the YAML.
"""

from __future__ import annotations

import pytest

from crossview.knowledge import hardware

NAMES = {
    "NVIDIA A100-SXM4-80GB": "a100-sxm4-80gb",  # real: Kineto (HTA 16-rank trace)
    "NVIDIA A100-PG509-200": "a100-sxm4-40gb",  # real: Kineto (HTA DDP trace, 42.3 GB)
    "NVIDIA A100-SXM4-40GB": "a100-sxm4-40gb",
    "NVIDIA A100-PCIE-40GB": "a100-pcie-40gb",
    "NVIDIA A100 80GB PCIe": "a100-pcie-80gb",  # real: nsys TARGET_INFO_GPU
    "NVIDIA B200": "b200",  # real: Kineto (TraceLens)
    "NVIDIA GB200": "gb200",
    "NVIDIA B300 SXM6 AC": "b300",
    "NVIDIA GB300": "gb300",
    "NVIDIA H100 80GB HBM3": "h100-sxm",  # real: Kineto, DCGM modelName, nvidia-smi
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA H100 NVL": "h100-nvl",
    "NVIDIA H200": "h200-sxm",  # real: nsys TARGET_INFO_GPU
    "NVIDIA H200 NVL": "h200-nvl",
    "NVIDIA L40S": "l40s",
    "Tesla V100-SXM2-32GB": "v100-sxm2-32gb",  # real: Kineto (HTA V100 trace)
    "Tesla V100-SXM2-16GB": "v100-sxm2-16gb",
    "Tesla V100-PCIE-32GB": "v100-pcie-32gb",
    "Tesla T4": "t4",  # real: dcgm-exporter modelName
    "NVIDIA GeForce RTX 5090": "rtx-5090",
    "NVIDIA GeForce RTX 2080 Ti": "rtx-2080-ti",  # real: ncu device__attribute_display_name
    "NVIDIA A10G": "a10g",  # real: ncu device__attribute_display_name
    "AMD Instinct MI300X": "mi300x",
    "AMD Instinct MI325X": "mi325x",
    "AMD Instinct MI355X": "mi355x",
}


@pytest.mark.parametrize(("name", "key"), NAMES.items())
def test_names_map_to_hw_keys(name: str, key: str) -> None:
    spec = hardware.match(name)
    assert spec is not None and spec.hw_key == key


def test_unknown_and_unnamed_devices() -> None:
    assert hardware.match("NVIDIA GH200 480GB") is None  # not h200: a different product
    assert hardware.match("Voodoo 5 5500") is None
    assert hardware.match("") is None
    # ROCm Kineto traces name nothing: real MI300X deviceProperties are name "", gfx 9.4,
    # 304 CUs, 206,141,652,992 bytes (192 GiB)
    spec = hardware.match("", sm_count=304, mem_bytes=206_141_652_992, cc="9.4")
    assert spec is not None and spec.hw_key == "mi300x"
    spec = hardware.match("", sm_count=304, mem_bytes=256 * 2**30 * 1.0, cc="9.4")
    assert spec is not None and spec.hw_key == "mi325x"
    # "NVIDIA A100" alone is split by the memory the capture reports
    assert hardware.match("NVIDIA A100", mem_bytes=85_899_345_920).hw_key == "a100-sxm4-80gb"
    assert hardware.match("NVIDIA A100") is None  # memory unknown: no guess


def test_required_gpus_and_sources() -> None:
    specs = hardware.specs()
    for key in ("a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-40gb", "a100-pcie-80gb",
                "h100-sxm", "h100-pcie", "h200-sxm", "b200", "gb200", "b300", "gb300", "l40s",
                "mi300x", "mi325x", "mi355x", "rtx-5090", "a10g", "rtx-2080-ti",
                "v100-sxm2-32gb", "t4"):
        s = specs[key]
        assert s.source and s.memory_bytes and s.dram_bytes_per_s, key
        assert s.peak_flops("fp32") or key in ("b200", "gb200", "b300", "gb300"), key
        if s.nvlink_bytes_per_s:
            assert s.nvlink_direction in ("bidirectional", "per-direction"), key
        if s.pcie_bytes_per_s:
            assert s.pcie_direction in ("bidirectional", "per-direction"), key


def test_dense_datasheet_values() -> None:
    s = hardware.specs()
    # dense, never the sparse headline: H100 SXM BF16 1,979 "with sparsity" → 989.5
    assert s["h100-sxm"].peak_flops("bf16_tensor") == pytest.approx(989.5e12)
    assert s["h100-sxm"].dram_bytes_per_s == pytest.approx(3.35e12)
    assert s["a100-sxm4-80gb"].peak_flops("tf32_tensor") == pytest.approx(156e12)
    assert s["a100-sxm4-80gb"].dram_bytes_per_s == pytest.approx(2.039e12)
    assert s["h200-sxm"].memory_bytes == pytest.approx(141e9)
    assert s["b200"].peak_flops("fp8_tensor") == pytest.approx(4500e12)
    assert s["mi300x"].peak_flops("bf16_tensor") == pytest.approx(1307.4e12)
    assert s["rtx-5090"].peak_flops("fp32") == pytest.approx(104.8e12)
    assert s["rtx-5090"].dram_bytes_per_s == pytest.approx(1.792e12)
    assert s["h100-sxm"].nvlink_bytes_per_s == pytest.approx(900e9)
