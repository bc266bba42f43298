#include "loadgen/llm_loadgen.hpp"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <thread>

#include "engine/outcome_rule.hpp"
#include "loadgen/no_answer.hpp"
#include "loadgen/open_loop.hpp"

namespace tessera {
namespace {

using nlohmann::json;

struct LlmOutcome {
  double sent = 0.0;
  double finished = 0.0;
  double first_token = -1.0;
  double last_token = -1.0;
  uint32_t tokens = 0;
  int status = 0;
  bool completed = false;  // the final event (finish_reason) arrived
  std::string error;       // an error event's or body's message
};

DropReason reason_in(const std::string& message) {
  const std::string prefix = "request dropped: ";
  if (message.rfind(prefix, 0) != 0) return DropReason::kNone;
  const std::string name = message.substr(prefix.size());
  for (int i = 1; i < static_cast<int>(DropReason::kCount); ++i) {
    if (drop_reason_name(static_cast<DropReason>(i)) == name) return static_cast<DropReason>(i);
  }
  return DropReason::kOverload;
}

std::string error_message(const json& doc) {
  if (!doc.is_object() || !doc.contains("error")) return {};
  const json& e = doc["error"];
  if (e.is_string()) return e.get<std::string>();
  if (e.is_object() && e.contains("message") && e["message"].is_string()) {
    return e["message"].get<std::string>();
  }
  return "error";
}

// Fails early, saying why, when no LLM server answers at the address.
void require_llm_server(const LoadgenOptions& options) {
  httplib::Client probe(options.host, options.port);
  probe.set_connection_timeout(5);
  const httplib::Result res = probe.Get("/v1/models");
  if (!res) {
    throw std::runtime_error("no answer from the server: " +
                             no_answer_reason(res.error(), options.host, options.port));
  }
  if (res->status != 200) {
    throw std::runtime_error("GET /v1/models: HTTP " + std::to_string(res->status) +
                             " (is this an LLM server, `tessera serve` of an llm: run?) " +
                             res->body.substr(0, 200));
  }
}

}  // namespace

LoadgenResult run_llm_loadgen(const App& app, const std::vector<Arrival>& arrivals,
                              const LoadgenOptions& options) {
  require_llm_server(options);
  LoadgenResult result(app, options.window_s);
  result.unmeasured.llm_engine =
      "a client sees tokens arrive, not the server's steps, preemptions or KV cache (see its "
      "/metrics)";
  std::vector<LlmOutcome> outcomes(arrivals.size());
  // One long printable text; each prompt is a slice of it.
  uint32_t longest = 1;
  for (const Arrival& a : arrivals) longest = std::max(longest, a.input_tokens);
  std::string text(longest + 64, 'a');
  std::mt19937_64 rng(options.seed);
  for (char& c : text) c = static_cast<char>('a' + rng() % 26);

  // A shared prefix (workload.shared_prefix): its group's text, then the request's own.
  const auto prompt_of = [&](std::size_t i, const Arrival& a) {
    const uint32_t n = std::max<uint32_t>(1, a.input_tokens);
    const uint32_t shared = std::min(n, a.shared_prefix_tokens);
    std::string prompt;
    if (shared > 0) {
      std::mt19937_64 group_rng(options.seed ^ (0x5eedULL + a.prefix_group * 0x9e3779b9ULL));
      prompt.resize(shared);
      for (char& c : prompt) c = static_cast<char>('a' + group_rng() % 26);
    }
    return prompt + text.substr(i % 64, n - shared);
  };
  const std::vector<double> offsets = offsets_from_first(arrivals);
  const OpenLoopClient client{options.host,      options.port, options.connections,
                              options.timeout_s, "/v1/models", options.progress};
  const OpenLoopStats sent = run_open_loop(
      offsets, client, [&](std::size_t i, httplib::Client& cli, const SinceStart& since_start) {
        const Arrival& a = arrivals[i];
        LlmOutcome& o = outcomes[i];
        o.sent = offsets[i];
        json body = {{"prompt", prompt_of(i, a)},
                     {"max_tokens", std::max<uint32_t>(1, a.output_tokens)},
                     {"ignore_eos", true},  // replay the trace's output lengths
                     {"stream", true}};
        if (!options.model.empty()) body["model"] = options.model;
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/completions";
        req.set_header("Content-Type", "application/json");
        req.body = body.dump();
        std::string buffer;
        std::string plain;  // a non-streamed (error) body
        req.content_receiver = [&](const char* data, std::size_t n, uint64_t, uint64_t) {
          const double now = since_start();
          buffer.append(data, n);
          std::size_t end;
          while ((end = buffer.find("\n\n")) != std::string::npos) {
            const std::string event = buffer.substr(0, end);
            buffer.erase(0, end + 2);
            if (event.rfind("data: ", 0) != 0) {
              plain += event;
              continue;
            }
            const std::string payload = event.substr(6);
            if (payload == "[DONE]") continue;
            const json doc = json::parse(payload, nullptr, false);
            if (const std::string err = error_message(doc); !err.empty()) {
              o.error = err;
              continue;
            }
            if (!doc.is_object() || !doc.contains("choices")) continue;
            const json& choice = doc["choices"][0];
            if (choice.contains("finish_reason") && !choice["finish_reason"].is_null()) {
              o.completed = true;
              continue;
            }
            ++o.tokens;
            if (o.first_token < 0) o.first_token = now;
            o.last_token = now;
          }
          if (buffer.size() > (1u << 20)) plain += buffer, buffer.clear();
          return true;
        };
        httplib::Result res = cli.send(req);
        o.finished = since_start();
        o.status = res ? res->status : 0;
        if (res && res->status != 200 && o.error.empty()) {
          o.error = error_message(json::parse(buffer + plain, nullptr, false));
        }
      });
  record_sends(sent, result.stats);

  std::map<int, uint64_t> statuses;
  for (const LlmOutcome& o : outcomes) {
    result.metrics.on_arrival(o.sent);
    statuses[o.status]++;
  }
  const TaskId root = app.roots.empty() ? 0 : app.roots.front();
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const LlmOutcome& o = outcomes[i];
    RequestRecord r;
    r.id = i;
    r.arrival = o.sent;
    r.finish = o.finished;
    r.drop_task = root;
    if (o.status == 200 && o.completed && o.error.empty()) {
      r.ttft = o.first_token - o.sent;
      r.tpot = o.tokens > 1 ? (o.last_token - o.first_token) / (o.tokens - 1.0) : 0.0;
      r.output_tokens = o.tokens;
      r.outcome = completion_outcome(app, o.finished, o.sent + app.slo, r.ttft, r.tpot);
    } else if (o.status == 429) {
      r.outcome = Outcome::kDropped;
      r.reason = DropReason::kOverload;
    } else if (const DropReason reason = reason_in(o.error); reason != DropReason::kNone) {
      r.outcome = Outcome::kDropped;
      r.reason = reason;
    } else {
      r.outcome = Outcome::kFailed;
    }
    result.metrics.on_request_done(r);
  }
  result.stats.status_counts.assign(statuses.begin(), statuses.end());
  return result;
}

}  // namespace tessera
