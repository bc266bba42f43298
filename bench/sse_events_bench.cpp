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

std::string completion_stream() {
  std::string s;
  for (int i = 0; i < 6; ++i) {
    s += "data: {\"id\":\"cmpl-4b1c2d\",\"object\":\"text_completion\",\"created\":1732890000,"
         "\"model\":\"tiny-llama\",\"choices\":[{\"index\":0,\"text\":\" the\",\"logprobs\":null,"
         "\"finish_reason\":null,\"stop_reason\":null}],\"usage\":null}\n\n";
  }
  s += "data: {\"id\":\"cmpl-4b1c2d\",\"object\":\"text_completion\",\"created\":1732890000,"
       "\"model\":\"tiny-llama\",\"choices\":[],\"usage\":{\"prompt_tokens\":16,"
       "\"total_tokens\":22,\"completion_tokens\":6}}\n\n";
  return s + "data: [DONE]\n\n";
}

std::string chat_stream() {
  std::string s;
  for (int i = 0; i < 6; ++i) {
    s += "data: {\"id\":\"chatcmpl-9f\",\"object\":\"chat.completion.chunk\",\"created\":"
         "1732890000,\"model\":\"tiny-llama\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
         "\" the\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
  }
  s += "data: {\"id\":\"chatcmpl-9f\",\"object\":\"chat.completion.chunk\",\"created\":"
       "1732890000,\"model\":\"tiny-llama\",\"choices\":[],\"usage\":{\"prompt_tokens\":16,"
       "\"total_tokens\":22,\"completion_tokens\":6}}\n\n";
  return s + "data: [DONE]\n\n";
}

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

BENCHMARK_CAPTURE(BM_SseStream, completions_by_event, completion_stream(), 0)
    ->Iterations(kIterations);
BENCHMARK_CAPTURE(BM_SseStream, chat_by_event, chat_stream(), 0)->Iterations(kIterations);
BENCHMARK_CAPTURE(BM_SseStream, completions_in_64_byte_pieces, completion_stream(), 64)
    ->Iterations(kIterations);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
