#include "workload/merged_source.hpp"

#include <utility>

namespace tessera {

MergedSource::MergedSource(std::vector<std::unique_ptr<ArrivalSource>> streams) {
  heads_.reserve(streams.size());
  for (auto& stream : streams) {
    Head head;
    head.source = std::move(stream);
    head.live = head.source->next(head.pending);
    heads_.push_back(std::move(head));
  }
}

bool MergedSource::next(Arrival& out) {
  Head* first = nullptr;
  for (auto& head : heads_) {
    if (head.live && (first == nullptr || head.pending.time < first->pending.time)) first = &head;
  }
  if (first == nullptr) return false;
  out = first->pending;
  first->live = first->source->next(first->pending);
  return true;
}

std::string MergedSource::describe() const {
  std::string out = "sum(";
  for (std::size_t i = 0; i < heads_.size(); ++i) {
    out += (i == 0 ? "" : " + ") + heads_[i].source->describe();
  }
  return out + ")";
}

}  // namespace tessera
