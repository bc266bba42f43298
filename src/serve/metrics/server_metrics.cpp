#include "serve/metrics/server_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "models/model_spec.hpp"

namespace tessera {
namespace {

const std::vector<double> kLatencyBounds{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                         0.1,    0.25,  0.5,    1.0,   2.5,  5.0,   10.0};
const std::vector<double> kBatchBounds{1, 2, 4, 8, 16, 32, 64, 128};

// Label values are task, variant and app names: escaped as the text format requires.
std::string esc(const std::string& s) { return prom_label_escape(s); }

}  // namespace

std::string_view answer_kind_name(AnswerKind kind) {
  switch (kind) {
    case AnswerKind::kOk:
      return "ok";
    case AnswerKind::kLate:
      return "late";
    case AnswerKind::kDropped:
      return "dropped";
    case AnswerKind::kFailed:
      return "failed";
    case AnswerKind::kRejected:
      return "rejected";
    case AnswerKind::kShutdown:
      return "shutdown";
    case AnswerKind::kInvalid:
      return "invalid";
    case AnswerKind::kError:
      return "error";
    case AnswerKind::kCount:
      break;
  }
  return "?";
}

EndpointMetrics::EndpointMetrics(std::string endpoint, const App& app)
    : name(std::move(endpoint)), latency(kLatencyBounds) {
  for (const Task& t : app.tasks) {
    tasks.push_back(t.name);
    std::vector<std::string> names;
    for (const Variant& v : t.variants) names.push_back(v.name);
    variant_batches.emplace_back(names.size(), 0);
    variants.push_back(std::move(names));
    batch_size.emplace_back(kBatchBounds);
  }
  batch_seconds.assign(tasks.size(), 0.0);
  drops.resize(tasks.size());
  queue_length.assign(tasks.size(), 0);
}

EndpointMetrics& ServerMetrics::add_endpoint(const std::string& name, const App& app) {
  std::lock_guard lock(mutex_);
  endpoints_.push_back(std::make_unique<EndpointMetrics>(name, app));
  return *endpoints_.back();
}

void ServerMetrics::answered(EndpointMetrics& e, AnswerKind kind, Time latency) {
  std::lock_guard lock(mutex_);
  e.answers[static_cast<std::size_t>(kind)]++;
  if (kind == AnswerKind::kOk || kind == AnswerKind::kLate) e.latency.add(latency);
}

void ServerMetrics::request_answered(EndpointMetrics& e, AnswerKind kind) {
  std::lock_guard lock(mutex_);
  e.requests[static_cast<std::size_t>(kind)]++;
}

void ServerMetrics::dropped(EndpointMetrics& e, TaskId task, DropReason reason) {
  std::lock_guard lock(mutex_);
  e.drops[task][static_cast<std::size_t>(reason)]++;
}

void ServerMetrics::batch_started(EndpointMetrics& e, TaskId task, int variant, std::size_t size) {
  std::lock_guard lock(mutex_);
  e.batch_size[task].add(static_cast<double>(size));
  e.variant_batches[task][static_cast<std::size_t>(variant)]++;
}

void ServerMetrics::batch_finished(EndpointMetrics& e, TaskId task, Time seconds) {
  std::lock_guard lock(mutex_);
  e.batch_seconds[task] += seconds;
}

void ServerMetrics::set_queue_lengths(EndpointMetrics& e, const std::vector<std::size_t>& lengths) {
  std::lock_guard lock(mutex_);
  for (std::size_t t = 0; t < lengths.size() && t < e.queue_length.size(); ++t) {
    e.queue_length[t] = lengths[t];
  }
}

void ServerMetrics::http_error(int status) {
  std::lock_guard lock(mutex_);
  for (auto& [code, n] : http_errors_) {
    if (code == status) {
      ++n;
      return;
    }
  }
  http_errors_.emplace_back(status, 1);
}

void ServerMetrics::set_in_flight(int64_t n) {
  std::lock_guard lock(mutex_);
  in_flight_ = n;
}

void ServerMetrics::set_models(std::vector<std::pair<std::string, std::string>> variant_kinds) {
  std::lock_guard lock(mutex_);
  models_ = std::move(variant_kinds);
}

std::string ServerMetrics::render() const {
  std::lock_guard lock(mutex_);
  std::string out;
  out += "# HELP tessera_requests_total Inference requests answered, by endpoint and outcome.\n";
  out += "# TYPE tessera_requests_total counter\n";
  for (const auto& e : endpoints_) {
    for (std::size_t k = 0; k < e->requests.size(); ++k) {
      out += fmt::format("tessera_requests_total{{app=\"{}\",outcome=\"{}\"}} {}\n", esc(e->name),
                         answer_kind_name(static_cast<AnswerKind>(k)), e->requests[k]);
    }
  }
  out +=
      "# HELP tessera_rows_total Rows (items) of inference requests answered, by endpoint and "
      "the row's outcome.\n";
  out += "# TYPE tessera_rows_total counter\n";
  for (const auto& e : endpoints_) {
    for (std::size_t k = 0; k < e->answers.size(); ++k) {
      out += fmt::format("tessera_rows_total{{app=\"{}\",outcome=\"{}\"}} {}\n", esc(e->name),
                         answer_kind_name(static_cast<AnswerKind>(k)), e->answers[k]);
    }
  }
  out += "# HELP tessera_request_latency_seconds Server-side latency of answered requests.\n";
  out += "# TYPE tessera_request_latency_seconds histogram\n";
  for (const auto& e : endpoints_) {
    render_prom_histogram(out, "tessera_request_latency_seconds",
                          fmt::format("app=\"{}\"", esc(e->name)), e->latency);
  }
  out += "# HELP tessera_queue_length Items queued or in a forming batch, per stage.\n";
  out += "# TYPE tessera_queue_length gauge\n";
  for (const auto& e : endpoints_) {
    for (std::size_t t = 0; t < e->tasks.size(); ++t) {
      out += fmt::format("tessera_queue_length{{app=\"{}\",task=\"{}\"}} {}\n", esc(e->name),
                         esc(e->tasks[t]), e->queue_length[t]);
    }
  }
  out += "# HELP tessera_batch_size Items per batch, per stage.\n";
  out += "# TYPE tessera_batch_size histogram\n";
  for (const auto& e : endpoints_) {
    for (std::size_t t = 0; t < e->tasks.size(); ++t) {
      render_prom_histogram(out, "tessera_batch_size",
                            fmt::format("app=\"{}\",task=\"{}\"", esc(e->name), esc(e->tasks[t])),
                            e->batch_size[t]);
    }
  }
  out += "# HELP tessera_batch_seconds_total Time spent executing batches, per stage.\n";
  out += "# TYPE tessera_batch_seconds_total counter\n";
  for (const auto& e : endpoints_) {
    for (std::size_t t = 0; t < e->tasks.size(); ++t) {
      out += fmt::format("tessera_batch_seconds_total{{app=\"{}\",task=\"{}\"}} {}\n", esc(e->name),
                         esc(e->tasks[t]), e->batch_seconds[t]);
    }
  }
  out += "# HELP tessera_drops_total Requests dropped, by stage and reason.\n";
  out += "# TYPE tessera_drops_total counter\n";
  for (const auto& e : endpoints_) {
    for (std::size_t t = 0; t < e->tasks.size(); ++t) {
      for (std::size_t r = 1; r < e->drops[t].size(); ++r) {
        out += fmt::format("tessera_drops_total{{app=\"{}\",task=\"{}\",reason=\"{}\"}} {}\n",
                           esc(e->name), esc(e->tasks[t]),
                           drop_reason_name(static_cast<DropReason>(r)), e->drops[t][r]);
      }
    }
  }
  out += "# HELP tessera_variant_batches_total Batches run, by stage and chosen variant.\n";
  out += "# TYPE tessera_variant_batches_total counter\n";
  for (const auto& e : endpoints_) {
    for (std::size_t t = 0; t < e->tasks.size(); ++t) {
      for (std::size_t v = 0; v < e->variants[t].size(); ++v) {
        out += fmt::format(
            "tessera_variant_batches_total{{app=\"{}\",task=\"{}\",variant=\"{}\"}} {}\n",
            esc(e->name), esc(e->tasks[t]), esc(e->variants[t][v]), e->variant_batches[t][v]);
      }
    }
  }
  out += "# HELP tessera_http_errors_total Requests refused before reaching an endpoint.\n";
  out += "# TYPE tessera_http_errors_total counter\n";
  for (const auto& [code, n] : http_errors_) {
    out += fmt::format("tessera_http_errors_total{{code=\"{}\"}} {}\n", code, n);
  }
  out += "# HELP tessera_requests_in_flight Inference requests admitted and not yet answered.\n";
  out += "# TYPE tessera_requests_in_flight gauge\n";
  out += fmt::format("tessera_requests_in_flight {}\n", in_flight_);
  out +=
      "# HELP tessera_model_info The executor serving each variant; emulated=\"true\" marks a "
      "profile-timed emulation (no real model).\n";
  out += "# TYPE tessera_model_info gauge\n";
  for (const auto& [variant, kind] : models_) {
    out += fmt::format("tessera_model_info{{variant=\"{}\",executor=\"{}\",emulated=\"{}\"}} 1\n",
                       esc(variant), esc(kind), kind == kProfileTimedKind ? "true" : "false");
  }
  return out;
}

uint64_t ServerMetrics::executions(const EndpointMetrics& e) const {
  std::lock_guard lock(mutex_);
  uint64_t n = 0;
  for (const PromHistogram& h : e.batch_size) n += h.count;
  return n;
}

}  // namespace tessera
