#include "spec/llm_measured_spec.hpp"

#include "llm/llm_measured_cost.hpp"

namespace tessera {
namespace {

std::vector<double> numbers(const SpecNode& node) {
  std::vector<double> out;
  for (const SpecNode& item : node.items()) out.push_back(item.as_number());
  return out;
}

// The node a MeasuredStepCosts::problem names ("decode.ms[1][2]: ..."), so the error
// carries the field's whole path; `node` itself when the name does not resolve.
SpecNode named_node(const SpecNode& node, const std::string& field) {
  SpecNode at = node;
  std::size_t i = 0;
  while (i < field.size()) {
    if (field[i] == '.') {
      ++i;
      continue;
    }
    if (field[i] == '[') {
      const std::size_t close = field.find(']', i);
      if (close == std::string::npos || !at.is_sequence()) return at;
      const auto index = std::stoul(field.substr(i + 1, close - i - 1));
      const auto items = at.items();
      if (index >= items.size()) return at;
      at = items[index];
      i = close + 1;
      continue;
    }
    const std::size_t end = field.find_first_of(".[", i);
    const std::string key = field.substr(i, end == std::string::npos ? end : end - i);
    if (!at.is_map() || !at.has(key)) return at;
    at = at.at(key);
    i = end == std::string::npos ? field.size() : end;
  }
  return at;
}

}  // namespace

std::shared_ptr<const CostModel> parse_llm_measured_cost(const SpecNode& node) {
  node.allow_only({"kind", "prefill_fit", "step_overhead_ms", "prefill", "decode"});
  MeasuredStepCosts costs;
  if (auto fit = node.get("prefill_fit")) {
    costs.fit = fit->as_choice({"table", "quadratic"}) == "quadratic" ? PrefillFit::kQuadratic
                                                                      : PrefillFit::kTable;
  }
  if (auto o = node.get("step_overhead_ms")) costs.step_overhead_ms = o->as_ms();
  const SpecNode prefill = node.at("prefill");
  prefill.allow_only({"tokens", "ms"});
  costs.prefill_tokens = numbers(prefill.at("tokens"));
  costs.prefill_ms = numbers(prefill.at("ms"));
  const SpecNode decode = node.at("decode");
  decode.allow_only({"batch", "context", "ms"});
  costs.decode_batch = numbers(decode.at("batch"));
  costs.decode_context = numbers(decode.at("context"));
  for (const SpecNode& row : decode.at("ms").items()) costs.decode_ms.push_back(numbers(row));
  if (const std::string problem = costs.problem(); !problem.empty()) {
    const std::size_t colon = problem.find(": ");
    if (colon == std::string::npos) node.fail(problem);
    named_node(node, problem.substr(0, colon)).fail(problem.substr(colon + 2));
  }
  return std::make_shared<LlmMeasuredCostModel>(std::move(costs));
}

}  // namespace tessera
