#include "llm_torch/shard_pool.hpp"

namespace tessera {

ShardPool::ShardPool(int ranks)
    : ranks_(ranks < 1 ? 1 : ranks), start_(ranks_), done_(ranks_), exchange_(ranks_) {
  for (int r = 1; r < ranks_; ++r) threads_.emplace_back([this, r] { worker(r); });
}

ShardPool::~ShardPool() {
  stop_ = true;
  if (ranks_ > 1) start_.arrive_and_wait();
  for (std::thread& t : threads_) t.join();
}

void ShardPool::run(const std::function<void(int)>& fn) {
  if (ranks_ == 1) {
    fn(0);
    return;
  }
  task_ = &fn;
  start_.arrive_and_wait();  // publishes task_ to the workers
  fn(0);
  done_.arrive_and_wait();
  task_ = nullptr;
}

void ShardPool::worker(int rank) {
  for (;;) {
    start_.arrive_and_wait();
    if (stop_) return;
    (*task_)(rank);
    done_.arrive_and_wait();
  }
}

}  // namespace tessera
