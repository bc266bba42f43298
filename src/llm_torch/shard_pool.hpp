#pragma once

// The threads of a tensor-parallel group: `ranks` shards, rank 0 on the caller's thread
// and ranks 1.. on threads the pool owns for its lifetime. run(fn) runs fn(rank) on every
// rank at once and returns when all are done; all_reduce_sync() is the barrier the ranks
// of one run() use to exchange partial results (an all-reduce is: write your partial,
// sync, sum everyone's, sync). One run() at a time: the pool belongs to one caller (a
// pipeline stage). fn must not throw (the decoder validates its inputs before a run).

#include <barrier>
#include <functional>
#include <thread>
#include <vector>

namespace tessera {

class ShardPool {
 public:
  explicit ShardPool(int ranks);
  ~ShardPool();
  ShardPool(const ShardPool&) = delete;
  ShardPool& operator=(const ShardPool&) = delete;

  int ranks() const { return ranks_; }
  void run(const std::function<void(int rank)>& fn);
  // Every rank of the current run() waits here until all ranks arrive.
  void all_reduce_sync() { exchange_.arrive_and_wait(); }

 private:
  void worker(int rank);

  int ranks_;
  std::barrier<> start_, done_, exchange_;
  const std::function<void(int)>* task_ = nullptr;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tessera
