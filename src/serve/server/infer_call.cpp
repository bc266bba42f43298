#include "serve/server/infer_call.hpp"

#include <algorithm>
#include <string_view>

namespace tessera {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The INT64 companion of output T, `T.input_row`: for each row of T, the input row it came
// from (a fan-out stage answers any number of rows per input row).
constexpr std::string_view kRowIndexSuffix = ".input_row";

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

InferResult refusal(int status, const std::string& message, const json& extra = {},
                    bool retry = false) {
  InferResult r;
  r.status = status;
  r.retry_after = retry;
  r.error = message;
  r.error_body = error_body(message, extra);
  return r;
}

InferResult answer_error(const Answer& a) {
  switch (a.kind) {
    case AnswerKind::kDropped: {
      const std::string reason(drop_reason_name(a.reason));
      if (a.stage.empty()) {  // the endpoint's own deadline (Endpoint::admit)
        return refusal(503, "request dropped: " + reason + " (no answer within twice its SLO)",
                       {{"outcome", "dropped"}, {"reason", reason}}, true);
      }
      return refusal(503, "request dropped at stage '" + a.stage + "': " + reason,
                     {{"outcome", "dropped"}, {"stage", a.stage}, {"reason", reason}}, true);
    }
    case AnswerKind::kFailed:
      return refusal(503, "request failed at stage '" + a.stage + "': no live worker",
                     {{"outcome", "failed"}, {"stage", a.stage}});
    case AnswerKind::kShutdown:
      return refusal(503, a.message, {{"outcome", "shutdown"}}, true);
    case AnswerKind::kError:
      return refusal(500, a.message, {{"outcome", "error"}, {"stage", a.stage}});
    default:
      break;
  }
  return refusal(500, "internal error: unexpected answer");
}

// One request's items (a batch of N is N engine requests), answered together once the
// last item's answer arrives (on the event loop thread).
struct Call {
  Endpoint* ep = nullptr;
  InferRequest request;              // without its input values (they went to the engine)
  std::vector<std::string> outputs;  // the outputs to return, in order
  std::vector<bool> binary;          // per output
  std::vector<Answer> answers;       // per item
  std::size_t left = 0;
  Clock::time_point start;
  double parse_s = 0.0;
  Admission::Ticket guard;  // the items in flight, until the answer is given
  DoneFn done;
};

// How the request as a whole was answered: its first row not ok or late, else late if any
// row was, else ok (the answer call_result gives).
AnswerKind request_kind(const Call& c) {
  bool late = false;
  for (const Answer& a : c.answers) {
    if (a.kind != AnswerKind::kOk && a.kind != AnswerKind::kLate) return a.kind;
    late = late || a.kind == AnswerKind::kLate;
  }
  return late ? AnswerKind::kLate : AnswerKind::kOk;
}

// A request is answered whole: if any row was not completed (dropped, failed, an error),
// the request gets that first row's status, and with more than one row its message names
// the row and the body's `rows` lists every row's outcome (index, outcome, stage, reason),
// so that a client knows which rows to resend. No partial outputs: a client reading
// `outputs` never sees fewer rows than it sent without an error.
InferResult row_error(const Call& c, std::size_t first_bad) {
  InferResult r = answer_error(c.answers[first_bad]);
  if (c.answers.size() < 2) return r;
  nlohmann::json body = nlohmann::json::parse(r.error_body);
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < c.answers.size(); ++i) {
    const Answer& a = c.answers[i];
    nlohmann::json row = {{"row", i}, {"outcome", std::string(answer_kind_name(a.kind))}};
    if (!a.stage.empty()) row["stage"] = a.stage;
    if (a.kind == AnswerKind::kDropped) row["reason"] = std::string(drop_reason_name(a.reason));
    rows.push_back(std::move(row));
  }
  r.error = "row " + std::to_string(first_bad) + " of " + std::to_string(c.answers.size()) + ": " +
            r.error + " (the request is answered whole; 'rows' has every row's outcome)";
  body["error"] = r.error;
  body["rows"] = std::move(rows);
  r.error_body = body.dump();
  return r;
}

InferResult call_result(ModelStatsTable& stats, Call& c) {
  for (std::size_t i = 0; i < c.answers.size(); ++i) {
    const Answer& a = c.answers[i];
    if (a.kind != AnswerKind::kOk && a.kind != AnswerKind::kLate) {
      stats.failed(c.ep->name(), since(c.start));
      return row_error(c, i);
    }
  }
  RequestTiming t;
  bool late = false;
  double accuracy = 0.0, latency = 0.0;
  for (const Answer& a : c.answers) {
    late = late || a.kind == AnswerKind::kLate;
    accuracy += a.accuracy / static_cast<double>(c.answers.size());
    latency = std::max(latency, a.latency);
    t.queue = std::max(t.queue, a.queue);
    t.infer = std::max(t.infer, a.latency - a.queue);
  }
  InferResult r;
  InferResponseHead& head = r.head;
  head.model_name = c.ep->name();
  head.model_version = kModelVersion;
  head.id = c.request.id;
  head.parameters = c.request.parameters;  // passed through; the server's own keys win
  head.parameters.erase("binary_data_output");
  head.parameters["outcome"] = late ? "late" : "ok";
  head.parameters["latency_ms"] = latency * 1e3;
  head.parameters["accuracy"] = accuracy;
  if (c.request.outputs.empty()) {  // every output the answers hold, in task order
    for (const Task& task : c.ep->app().tasks) {
      bool held = false;
      for (const Answer& a : c.answers) {
        for (const NamedOutput& n : a.outputs) held = held || n.name == task.name;
      }
      if (held) {
        c.outputs.push_back(task.name);
        c.binary.push_back(c.request.binary_data_output);
        // More than one row through a pipeline (whose stages may fan out): each output's
        // rows are tied to the input rows they came from.
        if (c.answers.size() > 1 && c.ep->app().tasks.size() > 1) {
          c.outputs.push_back(task.name + std::string(kRowIndexSuffix));
          c.binary.push_back(c.request.binary_data_output);
        }
      }
    }
  }
  for (std::size_t o = 0; o < c.outputs.size(); ++o) {
    ResponseOutput out;
    out.name = c.outputs[o];
    out.binary = c.binary[o];
    std::string of_task = out.name;
    out.indices = of_task.ends_with(kRowIndexSuffix);
    if (out.indices) of_task.resize(of_task.size() - kRowIndexSuffix.size());
    int64_t rows = 0;
    for (std::size_t i = 0; i < c.answers.size(); ++i) {
      for (NamedOutput& n : c.answers[i].outputs) {
        if (n.name != of_task) continue;
        const int64_t these = n.tensor.shape.empty() ? 1 : n.tensor.shape[0];
        rows += these;
        if (out.indices) {
          out.row_index.insert(out.row_index.end(), static_cast<std::size_t>(these),
                               static_cast<int64_t>(i));
          continue;
        }
        if (out.shape.empty()) out.shape = n.tensor.shape;
        out.data.insert(out.data.end(), n.tensor.data.begin(), n.tensor.data.end());
      }
    }
    if (out.indices) {
      out.shape = {rows};
      r.outputs.push_back(std::move(out));
      continue;
    }
    if (out.shape.empty()) {  // no row produced it (every path ended elsewhere)
      out.shape = {0};
      for (const auto& [task, shape] : c.ep->outputs()) {
        if (task == out.name) out.shape.insert(out.shape.end(), shape.begin(), shape.end());
      }
    } else {
      out.shape[0] = rows;
    }
    r.outputs.push_back(std::move(out));
  }
  t.input = c.parse_s;
  t.total = since(c.start);
  stats.succeeded(c.ep->name(), c.answers.size(), t);
  return r;
}

// Checks a parsed request against the endpoint's one FP32 input [-1, shape...] and its
// outputs; returns the items (one per batch row) or throws ProtocolError.
std::vector<std::shared_ptr<const FloatTensor>> items_of(const Endpoint& ep, Call& c,
                                                         int max_items) {
  InferRequest& req = c.request;
  if (req.inputs.size() != 1) {
    throw ProtocolError("expected exactly 1 input ('input'), got " +
                        std::to_string(req.inputs.size()));
  }
  RequestInput& in = req.inputs[0];
  if (in.datatype == DataType::kBytes || in.datatype == DataType::kBool) {
    throw ProtocolError("inputs[0].datatype " + std::string(datatype_name(in.datatype)) +
                        " is not supported: the model's input is FP32 (send FP32 or another "
                        "numeric type)");
  }
  const std::vector<int64_t>& shape = ep.input_shape();
  int64_t n = 1;
  if (in.shape == shape) {
    n = 1;
  } else if (in.shape.size() == shape.size() + 1 &&
             std::equal(in.shape.begin() + 1, in.shape.end(), shape.begin(), shape.end())) {
    n = in.shape[0];
  } else {
    throw ProtocolError("inputs[0].shape " + shape_string(in.shape) +
                        " does not match the model's input " + shape_string(shape) +
                        " (or [batch, " + shape_string(shape).substr(1) + ")");
  }
  // The model's one input is taken whatever its name ('input' in the metadata; a client
  // of Triton's model sends Triton's, e.g. INPUT__0).
  if (n < 1) throw ProtocolError("inputs[0].shape has a batch of 0");
  if (n > ep.max_request_rows()) {
    throw ProtocolError("a batch of " + std::to_string(n) + " rows is more than model '" +
                        ep.name() + "' takes at once: its first stage batches at most " +
                        std::to_string(ep.max_request_rows()) + " (send at most " +
                        std::to_string(ep.max_request_rows()) + " rows per request)");
  }
  if (n > max_items) {
    throw ProtocolError("a batch of " + std::to_string(n) + " is more than --max-inflight (" +
                        std::to_string(max_items) + ")");
  }
  for (std::size_t k = 0; k < in.values.size(); ++k) {
    if (!in_range(DataType::kFp32, in.values[k])) {
      throw ProtocolError("inputs[0]: element " + std::to_string(k) +
                          " does not fit the model's FP32 input");
    }
  }
  // Outputs: those requested, in request order, else (call_result) every output the
  // answers hold, in the app's task order. A leaf task's output is declared; a path
  // that ends earlier (fan-out 0) answers with its last task's output, so any task of
  // the app may be asked for.
  for (const RequestedOutput& o : req.outputs) {
    bool known = false;
    std::string names;
    for (const auto& [task, shape_] : ep.outputs()) {
      names += (names.empty() ? "'" : ", '") + task + "'";
    }
    for (const Task& task : ep.app().tasks) {
      known = known || task.name == o.name || task.name + std::string(kRowIndexSuffix) == o.name;
    }
    if (!known) {
      throw ProtocolError("unknown output '" + o.name + "': model '" + ep.name() +
                          "' has outputs " + names);
    }
    c.outputs.push_back(o.name);
    c.binary.push_back(o.binary);
  }
  const auto per = static_cast<std::size_t>(shape_numel(shape));
  std::vector<std::shared_ptr<const FloatTensor>> items;
  for (int64_t i = 0; i < n; ++i) {
    auto t = std::make_shared<FloatTensor>();
    t->shape = shape;
    t->data.reserve(per);
    const auto from = static_cast<std::size_t>(i) * per;
    for (std::size_t k = 0; k < per; ++k) {
      t->data.push_back(static_cast<float>(in.values[from + k]));
    }
    items.push_back(std::move(t));
  }
  in.values = {};
  return items;
}

}  // namespace

void KServeInference::record_output_time(const std::string& model, double seconds) {
  repository_.stats().output_written(model, seconds);
}

void KServeInference::start(const std::string& name, const std::string& version,
                            const ParseFn& parse, std::chrono::steady_clock::time_point start,
                            DoneFn done) {
  ModelStatsTable& stats = repository_.stats();
  const int max_inflight = admission_.max_in_flight();
  Endpoint* ep = repository_.find(name);
  if (ep == nullptr) {
    metrics_.http_error(400);
    return done(refusal(400, "unknown model '" + name + "'"));
  }
  if (!version.empty() && version != kModelVersion) {
    metrics_.http_error(400);
    return done(
        refusal(400, "model '" + name + "' has no version '" + version + "' (versions: 1)"));
  }
  if (!repository_.loaded(name)) {
    metrics_.request_answered(ep->metrics(), AnswerKind::kInvalid);
    metrics_.answered(ep->metrics(), AnswerKind::kInvalid, 0.0);
    stats.failed(name, since(start));
    return done(refusal(400, "model '" + name + "' is unloaded (POST /v2/repository/models/" +
                                 name + "/load loads it)"));
  }
  if (admission_.draining()) {
    Admission::Ticket ticket = admission_.enter(1);
    metrics_.request_answered(ep->metrics(), AnswerKind::kShutdown);
    metrics_.answered(ep->metrics(), AnswerKind::kShutdown, 0.0);
    stats.failed(name, since(start));
    return done(refusal(503, "the server is shutting down", {{"outcome", "shutdown"}}, true));
  }
  const auto overloaded = [&] {
    return refusal(429,
                   "overloaded: " + std::to_string(max_inflight) + " requests already in flight",
                   {{"outcome", "rejected"}}, true);
  };
  auto call = std::make_shared<Call>();
  call->ep = ep;
  call->start = start;
  std::vector<std::shared_ptr<const FloatTensor>> items;
  {
    // Admission first (1 for the request being parsed), before the body is parsed.
    Admission::Ticket probe = admission_.enter(1);
    if (probe.over_limit()) {
      metrics_.request_answered(ep->metrics(), AnswerKind::kRejected);
      metrics_.answered(ep->metrics(), AnswerKind::kRejected, 0.0);
      stats.failed(name, since(start));
      return done(overloaded());
    }
    try {
      ProtocolLimits limits;
      limits.max_values =
          static_cast<std::size_t>(std::max<int64_t>(1, shape_numel(ep->input_shape()))) *
          static_cast<std::size_t>(std::max(1, max_inflight));
      call->request = parse(limits);
      items = items_of(*ep, *call, max_inflight);
    } catch (const ProtocolError& e) {
      metrics_.request_answered(ep->metrics(), AnswerKind::kInvalid);
      metrics_.answered(ep->metrics(), AnswerKind::kInvalid, 0.0);
      stats.failed(name, since(start));
      return done(refusal(400, e.what()));
    }
  }
  const int n = static_cast<int>(items.size());
  call->guard = admission_.enter(n);
  if (call->guard.over_limit()) {
    call->guard.release();
    metrics_.request_answered(ep->metrics(), AnswerKind::kRejected);
    for (int i = 0; i < n; ++i) metrics_.answered(ep->metrics(), AnswerKind::kRejected, 0.0);
    stats.failed(name, since(start));
    return done(overloaded());
  }
  call->parse_s = since(start);
  call->answers.resize(items.size());
  call->left = items.size();
  call->done = std::move(done);
  // Each item's callback runs once, on the loop thread.
  const auto row_done = [&stats, &metrics = metrics_, call](std::size_t i) {
    return [&stats, &metrics, call, i](Answer&& a) {
      call->answers[i] = std::move(a);
      if (--call->left > 0) return;
      call->guard.release();
      metrics.request_answered(call->ep->metrics(), request_kind(*call));
      const DoneFn answer = std::move(call->done);
      answer(call_result(stats, *call));
    };
  };
  if (items.size() == 1) {
    ep->submit(std::move(items[0]), call->request.slo_s, row_done(0));
    return;
  }
  // The rows of a batched request arrive together, so that they are batched together.
  std::vector<Endpoint::Done> dones;
  dones.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) dones.push_back(row_done(i));
  ep->submit_rows(std::move(items), call->request.slo_s, std::move(dones));
}

}  // namespace tessera
