#include "loadgen/llm_loadgen.hpp"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

namespace tessera {
namespace {

using nlohmann::json;
using SteadyTime = std::chrono::steady_clock::time_point;

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

}  // namespace

LoadgenResult run_llm_loadgen(const App& app, const std::vector<Arrival>& arrivals,
                              const LoadgenOptions& options) {
  LoadgenResult result(app, options.window_s);
  std::vector<LlmOutcome> outcomes(arrivals.size());
  const double first = arrivals.empty() ? 0.0 : arrivals.front().time;
  const SteadyTime start = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  const auto at = [&](double t) {
    return start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                       std::chrono::duration<double>(t));
  };
  const auto since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // One long printable text; each prompt is a slice of it.
  uint32_t longest = 1;
  for (const Arrival& a : arrivals) longest = std::max(longest, a.input_tokens);
  std::string text(longest + 64, 'a');
  std::mt19937_64 rng(options.seed);
  for (char& c : text) c = static_cast<char>('a' + rng() % 26);

  std::atomic<std::size_t> next{0};
  std::atomic<uint64_t> sent_late{0};
  std::atomic<uint64_t> done_count{0};
  std::mutex lag_mutex;
  double max_lag = 0.0;

  auto client_thread = [&] {
    httplib::Client cli(options.host, options.port);
    cli.set_tcp_nodelay(true);
    cli.set_keep_alive(true);
    cli.set_connection_timeout(5);
    cli.set_read_timeout(static_cast<time_t>(std::max(1.0, options.timeout_s)));
    cli.set_write_timeout(static_cast<time_t>(std::max(1.0, options.timeout_s)));
    cli.Get("/v1/models");  // connect before the schedule starts
    while (true) {
      const std::size_t i = next.fetch_add(1);
      if (i >= arrivals.size()) return;
      const Arrival& a = arrivals[i];
      LlmOutcome& o = outcomes[i];
      o.sent = a.time - first;
      json body = {{"prompt", text.substr(i % 64, std::max<uint32_t>(1, a.input_tokens))},
                   {"max_tokens", std::max<uint32_t>(1, a.output_tokens)},
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
      std::this_thread::sleep_until(at(o.sent));
      const auto send = std::chrono::steady_clock::now();
      const double lag = std::chrono::duration<double>(send - at(o.sent)).count();
      if (lag > 1e-3) sent_late.fetch_add(1);
      {
        std::lock_guard lock(lag_mutex);
        max_lag = std::max(max_lag, lag);
      }
      httplib::Result res = cli.send(req);
      o.finished = since_start();
      o.status = res ? res->status : 0;
      if (res && res->status != 200 && o.error.empty()) {
        o.error = error_message(json::parse(buffer + plain, nullptr, false));
      }
      done_count.fetch_add(1);
    }
  };
  const auto wall0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < std::max(1, options.connections); ++i) threads.emplace_back(client_thread);
  if (options.progress) {
    while (done_count.load() < arrivals.size()) {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      spdlog::info("loadgen: {}/{} answered", done_count.load(), arrivals.size());
    }
  }
  for (auto& t : threads) t.join();
  result.stats.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();

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
      r.outcome = o.finished - o.sent <= app.slo + 1e-12 ? Outcome::kOk : Outcome::kLate;
      r.ttft = o.first_token - o.sent;
      r.tpot = o.tokens > 1 ? (o.last_token - o.first_token) / (o.tokens - 1.0) : 0.0;
      r.output_tokens = o.tokens;
      const bool misses_ttft = app.ttft_slo > 0 && r.ttft > app.ttft_slo + 1e-12;
      const bool misses_tpot = app.tpot_slo > 0 && r.tpot > app.tpot_slo + 1e-12;
      if (misses_ttft || misses_tpot) r.outcome = Outcome::kLate;
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
  result.stats.sent_late = sent_late.load();
  result.stats.max_send_lag_s = max_lag;
  return result;
}

}  // namespace tessera
