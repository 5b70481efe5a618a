#!/usr/bin/env bash
# Profile the prefill side of a disaggregated server with Nsight Systems and export the CSV
# reports the app's "Measured" page reads: per-transfer and per-layer durations of the KV send.
#
#   ./nsys.sh python -m vllm.entrypoints.openai.api_server --model ...   # then send traffic
#
# Profile only a steady window (DELAY seconds after start, for DURATION seconds) so warm-up and
# graph capture stay out of the numbers.
set -euo pipefail

OUT=${OUT:-kv_transfer_profile}
DELAY=${DELAY:-60}        # seconds to skip (model load, warm-up, CUDA graph capture)
DURATION=${DURATION:-30}  # seconds to record while traffic is flowing

if [[ $# -eq 0 ]]; then
    echo "usage: $0 <server command…>   (e.g. $0 python serve.py)" >&2
    exit 2
fi

# NCCL send/recv kernels are CUDA kernels and NCCL marks them with NVTX ranges, so cuda,nvtx is
# enough; newer nsys versions can also trace NCCL itself.
trace=cuda,nvtx
if nsys profile --help 2>&1 | grep -q -- '--nccl-trace'; then
    trace=cuda,nvtx,nccl
fi

nsys profile \
    --trace="$trace" \
    --sample=none --cpuctxsw=none \
    --delay="$DELAY" --duration="$DURATION" \
    --force-overwrite=true \
    --output="$OUT" \
    "$@"

# One CSV per report: ${OUT}_cuda_gpu_kern_sum.csv, ${OUT}_cuda_gpu_trace.csv and
# ${OUT}_nvtx_sum.csv.
# (nsys before 2023.2 named them gpukernsum, gputrace and nvtxsum.)
nsys stats \
    --report cuda_gpu_kern_sum,cuda_gpu_trace,nvtx_sum \
    --format csv \
    --output "$OUT" \
    --force-export=true \
    "$OUT.nsys-rep"

echo "upload ${OUT}_cuda_gpu_kern_sum.csv (all layers), ${OUT}_cuda_gpu_trace.csv (each" \
    "transfer) or ${OUT}_nvtx_sum.csv (your NVTX ranges) on the Measured page"
