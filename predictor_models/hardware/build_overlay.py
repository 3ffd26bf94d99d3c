"""The hand-kept overlay on the curated tables: our names, aliases, defaults, estimates, notes and networks."""
from __future__ import annotations

RENAME = {
    "K80 (per GK210 die)": "K80",
    "A16 (per GPU)": "A16",
    "GB200 (per GPU)": "GB200",
    "MI250 (package)": "MI250",
    "MI250 (per GCD)": "MI250-GCD",
    "MI250X (package)": "MI250X",
    "MI250X (per GCD)": "MI250X-GCD",
    "TPU v4 (per chip)": "TPU v4",
    "TPU v5e (per chip)": "TPU v5e",
    "TPU v5p (per chip)": "TPU v5p",
    "TPU v6e (per chip)": "TPU v6e",
}

# Odd spellings the name parser cannot derive (driver names, cloud catalog names).
ALIASES = {
    "H100-SXM5": ["H100 SXM"],
    "H100-NVL": ["H100 94GB"],  # sold as 94 GB; the 96 GB HBM2e SXM part is H100-SXM5-96GB
    "GH200-96GB": ["GH200 480GB"],  # torch reports the module incl. its 480 GB LPDDR5X
    "GH200-HBM3e": ["GH200 144GB", "GH200 624GB"],
    "MI250X-GCD": ["MI250X/MI250"],  # ROCm device name of one MI250/MI250X GCD
    "TPU v5e": ["TPU v5 lite", "TPU v5litepod"],
    "Quadro RTX 6000": ["RTX6000"],
    "K80": ["Tesla K80"],
    "TPU v6e": ["v6e", "Trillium", "TPU v6 lite", "TPU Trillium"],
    "H100-SXM5-500W": ["H100 SXM 500W", "H100 500W", "H100 SXM5 500W"],
    "H100-SXM5-96GB": ["H100 96GB", "H100 SXM 96GB", "H100 HBM2e", "H100 96GB HBM2e"],
    "H800": ["H800 SXM", "H800 SXM5"],
    "A800-SXM4-80GB": ["A800", "A800 SXM", "A800 80GB"],
    "MI300A": ["AMD Instinct MI300A"],
}

# A bare family name resolves to this variant (documented in docs/hardware.md).
DEFAULTS = {
    "A100": "A100-SXM4-80GB",
    "H100": "H100-SXM5",
    "H200": "H200-SXM",
    "GH200": "GH200-96GB",
    "V100": "V100-SXM2-16GB",
    "P100": "P100-PCIe-16GB",
    "MI250": "MI250",
    "MI250X": "MI250X",
}

# Figures missing from the curated table that we fill as labelled estimates (see each note). "fields" are peaks
# (TFLOPS by precision); "l2_cache_mb" an L2 the table lacks (the predictor reads a GPU without one as 4 MB).
_GH200_L2 = ("ESTIMATED L2: 50 MB, the H100 SXM5's (the same GH100 part with 132 SMs); not in a stored source (a GPU "
             "without the figure reads as 4 MB, and the GEMM network and the class models read the L2).")
ESTIMATES = {
    "A16": {
        "fields": {"bf16": 17.9},
        "note": "Per GPU; an A16 board holds 4 GPUs. TDP is per board (left empty). ESTIMATED bf16: the fp16 tensor "
        "rate, as on every Ampere GPU's tensor cores; no bf16 figure in a stored source (without one, its bf16 "
        "GEMMs fell to the class model, not monotone in their work).",
    },
    "GH200-96GB": {
        "fields": {}, "l2_cache_mb": 50,
        "note": "GPU part of the GH200 superchip (original HBM3 version; CPU side has up to 480 GB LPDDR5X). " + _GH200_L2,
    },
    "GH200-HBM3e": {
        "fields": {}, "l2_cache_mb": 50,
        "note": "HBM3e refresh of GH200 (141 GB, 4.8 TB/s); single-source (stas00); other fields unconfirmed. " + _GH200_L2,
    },
    "H100-NVL": {
        "fields": {"tf32": 417.5, "fp16": 835.5, "bf16": 835.5, "fp8": 1670.5, "fp64": 30.0},
        "interconnect_bandwidth_gbs": 600,
        "note": "ESTIMATED tensor/FP64 figures: NVIDIA H100 product-page NVL column (per GPU, TF32 835 / "
        "FP16 1671 / FP8 3341 with sparsity) halved; not in a stored source. NVLink bridge 600 GB/s.",
    },
    "RTX 5090": {
        "fields": {"tf32": 104.8, "fp16": 209.5, "bf16": 209.5, "fp8": 419.0},
        "note": "ESTIMATED tensor figures: FP16-accumulate dense 419 (838 sparse) is published; the "
        "FP32-accumulate rate PyTorch uses is taken as half of it, as on Turing/Ampere/Ada GeForce; "
        "TF32 = FP32 rate as on the 4090.",
    },
}

# Power-capped / memory variants of a part in the table: the same silicon under a lower power limit. The
# datasheet peaks assume the full-power clock; under a cap, tensor-heavy kernels settle at a lower sustained
# clock. Model (named, not fitted): sustained compute scales with the cap by linear interpolation between
# two vendor operating points of the same 132-SM GH100: the H100 SXM5 at 700 W (989.5 dense FP16) and the
# H100 NVL at 400 W (835.5 dense FP16 per NVIDIA's H100 product page, i.e. 0.844x). At 500 W that is
# 0.896x. torchtitan (docs/performance.md) says of its 500 W HBM2e H100 SXM: "the actual peak TFLOPs
# number is between SXM and NVL". Every compute peak and the boost clock are scaled; memory bandwidth is
# the part's own (HBM is not clocked down by the SM power limit).
POWER_CAP_POINTS = {"full_w": 700.0, "low_w": 400.0, "low_ratio": 835.5 / 989.5}
POWER_CAP = {
    "H100-SXM5-500W": {"base": "H100-SXM5", "tdp_w": 500.0},
    "H100-SXM5-96GB": {"base": "H100-SXM5", "tdp_w": 500.0},
}

# Hand-written short notes where the first sentence of the curated note would mislead.
NOTES = {
    "K80": "Per GK210 die (a K80 board holds two; PyTorch and clouds count one die as one GPU). No tensor cores.",
    "A16": "Per GPU; an A16 board holds 4 GPUs. TDP is per board (left empty).",
    "GB200": "Per Blackwell GPU of a GB200 superchip (Grace CPU + 2 GPUs).",
    "MI250": "Whole OAM package (2 GCDs); PyTorch sees each GCD as one device: see MI250-GCD.",
    "MI250X": "Whole OAM package (2 GCDs); PyTorch sees each GCD as one device: see MI250X-GCD.",
    "MI250-GCD": "One GCD of an MI250 = package/2; each GCD is a separate PyTorch/ROCm device.",
    "MI250X-GCD": "One GCD of an MI250X = package/2; each GCD is a separate PyTorch/ROCm device.",
    "MI100": "sm_count = CUs. BF16 matrix rate is half FP16 on CDNA1. No TF32.",
    "MI300X": "sm_count = CUs. TF32 column = AMD XF32 matrix rate. AMD sparse figures are 2x.",
    "MI325X": "sm_count = CUs. Same compute as MI300X, 256 GB HBM3e at 6 TB/s.",
    "TPU v4": "Per chip (2 TensorCores). Memory 32 GiB. Peak is bf16 (int8 same); no published fp32 peak.",
    "TPU v5e": "Per chip. 197 TFLOPS bf16, 394 TOPS int8; no published fp32 peak.",
    "TPU v5p": "Per chip (2 TensorCores). 459 TFLOPS bf16; no published fp32 peak.",
    "P100-PCIe-16GB": "No tensor cores; fp16 = packed FP16 rate (2x FP32).",
    "P100-SXM2-16GB": "No tensor cores; fp16 = packed FP16 rate (2x FP32).",
    "TITAN V": "Volta prosumer card: 80 SMs, 640 tensor cores (FP32 accumulate at full rate, 110 TFLOPS); "
    "FP16 non-tensor 27.6. 652.8 GB/s.",
    "GTX 1080 Ti": "No tensor cores; native FP16 runs at 1/64 rate, so fp16 work runs at the FP32 rate. "
    "TechPowerUp-only figures.",
    "TITAN Xp": "No tensor cores; native FP16 at 1/64 rate (fp16 work runs at the FP32 rate). 547.7 GB/s GDDR5X.",
    "P4": "No tensor cores; native FP16 at 1/64 rate. 20 SMs (deviceQuery; NeuSight's 40 is wrong). 75 W board.",
    "P40": "No tensor cores; native FP16 at 1/64 rate. 12 TFLOPS FP32, 346 GB/s, 250 W.",
    "A10G": "AWS G5 variant of GA102: 80 SMs; NVIDIA/AWS datasheet 35 FP32 / 70 FP16 dense.",
}

# FP32 on matrix cores (dense TFLOPS) where it beats the vector FP32 column: CDNA1/CDNA2 run FP32
# GEMMs at twice the vector rate. From the curated notes (ROCm MI100/MI250 docs, AMD MI210 table;
# MI250X package = 220 CUs x 256 FLOP/clk x 1.7 GHz); the per-GCD rows are package/2 like their other figures.
FP32_MATRIX = {"MI100": 46.1, "MI210": 45.3, "MI250": 90.5, "MI250-GCD": 45.25, "MI250X": 95.7,
               "MI250X-GCD": 47.85}

# Packed FP16 (non-tensor) rates the curated table keeps in its notes: PyTorch reaches them on GP100.
PACKED_FP16 = {"P100-PCIe-16GB": 18.7, "P100-SXM2-16GB": 21.2}

# Nodes and scale-out networks (multi-node data parallelism): GPUs in the largest common node (GB200: one
# NVL72 NVLink domain), the scale-out NIC bandwidth per GPU of the reference node named first in `network`
# (Gb/s each way), and intra-node fabric figures the curated table lacks. Other nodes of the same GPU
# (cloud instances with less network per GPU) are named in `network`; a target picks them with
# "2x8 H100 @ 200G". Entries without a network figure cannot be projected across nodes.
_AWS = "https://aws.amazon.com/ec2/instance-types/"
NETWORK = {
    "A100-SXM4-40GB": {
        "max_gpus_per_node": 8, "network_gbps_per_gpu": 200,
        "network": "DGX A100 / HGX A100: 8x ConnectX-6 200 Gb/s HDR InfiniBand, one per GPU; Azure ND A100 v4 "
                   "the same; AWS p4d 400 Gbps EFA per 8 GPUs (50 Gb/s per GPU)",
        "network_sources": ["https://docs.nvidia.com/dgx/dgxa100-user-guide/introduction-to-dgxa100.html",
                            _AWS + "p4/"]},
    "A100-SXM4-80GB": {
        "max_gpus_per_node": 8, "network_gbps_per_gpu": 200,
        "network": "DGX A100 640GB / HGX A100: 8x ConnectX-6 200 Gb/s HDR InfiniBand, one per GPU; Azure "
                   "ND A100 v4 / NDm A100 v4 8x 200 Gb/s; AWS p4de 400 Gbps EFA per 8 GPUs (50 Gb/s per GPU)",
        "network_sources": ["https://docs.nvidia.com/dgx/dgxa100-user-guide/introduction-to-dgxa100.html",
                            "https://learn.microsoft.com/en-us/azure/virtual-machines/ndm-a100-v4-series",
                            _AWS + "p4/"]},
    "H100-SXM5": {
        "max_gpus_per_node": 8, "network_gbps_per_gpu": 400,
        "network": "DGX H100 / HGX H100: 8x ConnectX-7 400 Gb/s NDR InfiniBand, one per GPU; Azure ND H100 v5 "
                   "8x 400 Gb/s; AWS p5 3200 Gbps EFA (400 Gb/s per GPU); GCP A3 Mega 8x 200 Gb/s",
        "network_sources": ["https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html",
                            _AWS + "p5/", "https://cloud.google.com/compute/docs/gpus/gpu-network-bandwidth"]},
    "H100-SXM5-96GB": {
        "max_gpus_per_node": 8, "network_gbps_per_gpu": 400,
        "network": "Meta Grand Teton: 8 GPUs fully connected with NVLink, 400 Gb/s RDMA per GPU (torchtitan)",
        "network_sources": ["https://github.com/pytorch/torchtitan/blob/main/docs/performance.md"]},
    "H200-SXM": {
        "max_gpus_per_node": 8, "network_gbps_per_gpu": 400,
        "network": "DGX H200 / HGX H200: 8x ConnectX-7 400 Gb/s NDR InfiniBand, one per GPU; AWS p5e/p5en "
                   "3200 Gbps EFA (400 Gb/s per GPU)",
        "network_sources": ["https://www.nvidia.com/en-us/data-center/dgx-h200/", _AWS + "p5/"]},
    "B200": {
        "max_gpus_per_node": 8, "network_gbps_per_gpu": 400,
        "network": "DGX B200 / HGX B200: 8x ConnectX-7 400 Gb/s InfiniBand / Ethernet, one per GPU; AWS p6-b200 "
                   "3200 Gbps EFA (400 Gb/s per GPU)",
        "network_sources": ["https://www.nvidia.com/en-us/data-center/dgx-b200/", _AWS + "p6/"]},
    "GB200": {
        "max_gpus_per_node": 72, "network_gbps_per_gpu": 400,
        "network": "GB200 NVL72: 72 GPUs in one NVLink domain (a 'node' here); 400 Gb/s ConnectX-7 per GPU "
                   "between racks",
        "network_sources": ["https://www.nvidia.com/en-us/data-center/gb200-nvl72/"]},
    "L4": {
        "max_gpus_per_node": 8, "network_gbps_per_gpu": 12.5,
        "network": "GCP g2-standard-96 (8x L4, 100 Gbps per VM, 12.5 Gb/s per GPU); AWS g6.48xlarge the same",
        "network_sources": ["https://cloud.google.com/compute/docs/accelerator-optimized-machines#g2-vms",
                            _AWS + "g6/"]},
    "T4": {
        "max_gpus_per_node": 8, "network_gbps_per_gpu": 12.5,
        "network": "AWS g4dn.metal (8x T4, 100 Gbps, 12.5 Gb/s per GPU)",
        "network_sources": [_AWS + "g4/"]},
    "A10G": {
        "max_gpus_per_node": 8, "network_gbps_per_gpu": 12.5,
        "network": "AWS g5.48xlarge (8x A10G, 100 Gbps, 12.5 Gb/s per GPU)",
        "network_sources": [_AWS + "g5/"]},
    "L40S": {
        "max_gpus_per_node": 8, "network_gbps_per_gpu": 50,
        "network": "AWS g6e.48xlarge (8x L40S, 400 Gbps EFA, 50 Gb/s per GPU)",
        "network_sources": [_AWS + "g6e/"]},
    "V100-SXM2-16GB": {
        "max_gpus_per_node": 8, "network_gbps_per_gpu": 50,
        "network": "DGX-1 (8x V100, 4x 100 Gb/s EDR InfiniBand, 50 Gb/s per GPU); AWS p3dn.24xlarge 100 Gbps "
                   "per 8 GPUs",
        "network_sources": ["https://docs.nvidia.com/dgx/dgx1-user-guide/introduction-to-dgx1.html",
                            _AWS + "p3/"]},
    "V100-SXM2-32GB": {
        "max_gpus_per_node": 8, "network_gbps_per_gpu": 50,
        "network": "DGX-1 (8x V100 32GB, 4x 100 Gb/s EDR InfiniBand, 50 Gb/s per GPU); AWS p3dn.24xlarge "
                   "100 Gbps per 8 GPUs (12.5 Gb/s per GPU)",
        "network_sources": ["https://docs.nvidia.com/dgx/dgx1-user-guide/introduction-to-dgx1.html",
                            _AWS + "p3/"]},
    "MI300X": {
        "max_gpus_per_node": 8, "network_gbps_per_gpu": 400, "interconnect_bandwidth_gbs": 896,
        "network": "8-GPU MI300X platform: fully connected xGMI mesh, 7 links x 64 GB/s each way per GPU "
                   "(896 GB/s aggregate; ~48 GB/s usable per link); Azure ND MI300X v5 8x 400 Gb/s InfiniBand",
        "network_sources": ["https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html",
                            "https://rocm.blogs.amd.com/software-tools-optimization/mi300x-rccl-xgmi/README.html",
                            "https://learn.microsoft.com/en-us/azure/virtual-machines/sizes/gpu-accelerated/"
                            "ndmi300xv5-series"]},
    "MI325X": {
        "max_gpus_per_node": 8, "network_gbps_per_gpu": 400, "interconnect_bandwidth_gbs": 896,
        "network": "8-GPU MI325X platform: fully connected xGMI mesh as MI300X (7 links x 64 GB/s each way); "
                   "400 Gb/s NIC per GPU",
        "network_sources": ["https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html",
                            "https://rocm.blogs.amd.com/software-tools-optimization/mi300x-rccl-xgmi/README.html"]},
}
NETWORK["H100-SXM5-500W"] = NETWORK["H100-SXM5"]  # the same HGX H100 nodes, run at a lower power limit
NETWORK_FIELDS = ("max_gpus_per_node", "network_gbps_per_gpu", "network", "network_sources")
