// The LLM gateway's reading of a backend's server-sent events (src/serve/fleet/sse_events.*,
// docs/benchmarks.md#llm-gateway-reading-a-backends-events): SseEvents::feed of a stream's
// events as vLLM sends them, each read for its token, error and usage.
//
//   build/bench/sse_events_bench
//
// A fixed number of iterations, so that an instruction count (valgrind --tool=callgrind)
// divides into a count per event. Each iteration feeds one stream of 8 events (one
// SseEvents per stream, as the gateway has one per request): 6 token chunks, the last
// chunk with `usage`, and data: [DONE].

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "serve/fleet/sse_events.hpp"

namespace tessera {
namespace {

constexpr int kIterations = 10000;

// A stream as vLLM sends it: six token chunks (the chunk's head, then `token_rest`), the
// last chunk with `usage`, and data: [DONE].
std::string vllm_stream(const std::string& id, const std::string& object,
                        const std::string& token_rest) {
  const std::string head = "{\"id\":\"" + id + "\",\"object\":\"" + object +
                           "\",\"created\":1732890000,\"model\":\"tiny-llama\",";
  std::string s;
  for (int i = 0; i < 6; ++i) s += "data: " + head + token_rest + "\n\n";
  return s + "data: " + head +
         "\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"total_tokens\":22,"
         "\"completion_tokens\":6}}\n\ndata: [DONE]\n\n";
}

const std::string kCompletions = vllm_stream(
    "cmpl-4b1c2d", "text_completion",
    "\"choices\":[{\"index\":0,\"text\":\" the\",\"logprobs\":null,\"finish_reason\":null,"
    "\"stop_reason\":null}],\"usage\":null}");
const std::string kChat =
    vllm_stream("chatcmpl-9f", "chat.completion.chunk",
                "\"choices\":[{\"index\":0,\"delta\":{\"content\":\" the\"},\"logprobs\":null,"
                "\"finish_reason\":null}]}");

// `piece`: the stream is fed in pieces of this many bytes (0: one event at a time).
void BM_SseStream(benchmark::State& state, const std::string& stream, std::size_t piece) {
  std::vector<std::string_view> pieces;
  const std::string_view all(stream);
  if (piece == 0) {
    for (std::size_t at = 0; at < all.size();) {
      const std::size_t end = all.find("\n\n", at) + 2;
      pieces.push_back(all.substr(at, end - at));
      at = end;
    }
  } else {
    for (std::size_t at = 0; at < all.size(); at += piece) pieces.push_back(all.substr(at, piece));
  }
  std::size_t tokens = 0;
  for (auto _ : state) {
    SseEvents events(1 << 20);
    for (std::string_view p : pieces) {
      for (const SseEvent& e : events.feed(p)) tokens += e.token;
    }
  }
  benchmark::DoNotOptimize(tokens);
  state.counters["events_per_stream"] = 8;
  state.SetItemsProcessed(state.iterations() * 8);
}

BENCHMARK_CAPTURE(BM_SseStream, completions_by_event, kCompletions, 0)->Iterations(kIterations);
BENCHMARK_CAPTURE(BM_SseStream, chat_by_event, kChat, 0)->Iterations(kIterations);
BENCHMARK_CAPTURE(BM_SseStream, completions_in_64_byte_pieces, kCompletions, 64)
    ->Iterations(kIterations);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
