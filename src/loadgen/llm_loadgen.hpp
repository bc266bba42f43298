#pragma once

// The LLM load generator (`tessera loadgen` on a run spec with an `llm:` section;
// docs/llm-serve.md#loadgen): replays arrivals open-loop against the live LLM server's
// OpenAI endpoint POST /v1/completions with "stream": true. Request i is sent at its
// arrival time with a prompt of arrival.input_tokens printable ASCII bytes (exactly that
// many tokens with the byte tokenizer; fewer with a BPE one; its first
// arrival.shared_prefix_tokens the same for every request of its prefix_group) and max_tokens =
// arrival.output_tokens. Per request it measures, on the client: TTFT (the first streamed
// token's arrival minus the scheduled send), TPOT ((last token - first token) / (tokens -
// 1)) and the tokens received, and turns the answer into the RequestRecord the simulator
// would write: ok / late against the app's SLO (goodput counts TTFT and TPOT SLOs too),
// dropped with the server's reason (503 before the stream, or an error event in it), 429
// as dropped (overload), anything else failed. The result feeds the simulator's
// MetricsCollector, so summarize() writes the same summary, "llm" block included.
//
// Throws std::runtime_error, saying why, when GET /v1/models gets no 200 before the run.
// The server's steps, preemptions and KV cache are marked unmeasured (and, by summarize(),
// the accuracy an LLM's answers do not carry).
//
// Threads: `connections` client threads, each with one keep-alive connection; the call
// blocks until every request is answered or timed out.

#include <vector>

#include "engine/app.hpp"
#include "loadgen/http_loadgen.hpp"
#include "workload/arrival.hpp"

namespace tessera {

// options.model: the model name sent (empty: none, the server's own).
LoadgenResult run_llm_loadgen(const App& app, const std::vector<Arrival>& arrivals,
                              const LoadgenOptions& options);

}  // namespace tessera
