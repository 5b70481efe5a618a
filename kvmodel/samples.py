"""The traces the app offers without an upload (``data/traces``), with their provenance: id →
(path under data/traces, title, source).  The table alone, importing nothing, so the input rows
(``kvmodel.inputs``) list the sample ids without loading the traffic package that imports them;
``kvmodel.traffic.samples`` adds the paths."""

from __future__ import annotations

SAMPLES = {
    "azure-conv": (
        "azure2023/AzureLLMInferenceTrace_conv.csv",
        "Azure LLM inference 2023: conversation",
        "Azure LLM inference trace 2023, Microsoft Azure (AzurePublicDataset), CC-BY-4.0; "
        "Patel et al., Splitwise, ISCA 2024",
    ),
    "azure-code": (
        "azure2023/AzureLLMInferenceTrace_code.csv",
        "Azure LLM inference 2023: code",
        "Azure LLM inference trace 2023, Microsoft Azure (AzurePublicDataset), CC-BY-4.0; "
        "Patel et al., Splitwise, ISCA 2024",
    ),
    "mooncake": (
        "mooncake/conversation_trace.jsonl",
        "Mooncake FAST'25: conversation (with prefix-cache blocks)",
        "Mooncake FAST'25 conversation trace, kvcache-ai/Mooncake, Apache-2.0; "
        "Qin et al., FAST 2025",
    ),
    "burstgpt": (
        "samples/burstgpt_sample.csv",
        "BurstGPT layout (synthetic sample)",
        "synthetic sample in the BurstGPT CSV layout, written for this project",
    ),
    "vllm-prom": (
        "samples/vllm_metrics_sample.prom",
        "vLLM /metrics scrape (synthetic sample)",
        "synthetic sample of vLLM's Prometheus exposition, written for this project",
    ),
}
DEFAULT_SAMPLE = "azure-conv"
