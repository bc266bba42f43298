#pragma once

// Admission: the requests a server has admitted and not yet answered, bounded by
// --max-inflight, and the drain at shutdown (docs/reliability.md#shutdown). A request (or
// each row of a batched one) holds a Ticket from admission until its answer is given; a
// server refuses a request whose ticket brings the count over the bound (429), and every
// request once draining has begun (503). drain() stops admitting and waits for the count to
// reach zero. Shared by both servers' front ends (serve/http/front_end.hpp).
//
// Threads: any thread; lock-free counting, a mutex and condition variable only for those
// who wait (drain, wait_until_in_flight).

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace tessera {

class Admission {
 public:
  explicit Admission(int max_in_flight) : max_(max_in_flight) {}
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  // `n` requests in flight until the ticket is destroyed or released. Movable.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Admission& admission, int n);
    ~Ticket() { release(); }
    Ticket(Ticket&& other) noexcept;
    Ticket& operator=(Ticket&& other) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    // Requests in flight once this ticket's were counted (its own included).
    int count() const { return count_; }
    // Whether this ticket's requests brought the count over the bound (refuse them: 429).
    bool over_limit() const;
    void release();

   private:
    Admission* admission_ = nullptr;
    int n_ = 0;
    int count_ = 0;
  };

  Ticket enter(int n = 1) { return Ticket(*this, n); }
  int max_in_flight() const { return max_; }
  int in_flight() const { return in_flight_.load(); }
  bool draining() const { return draining_.load(); }
  // Stops admitting; waits up to timeout_s for the requests in flight to be answered. False
  // if some are still in flight then.
  bool drain(double timeout_s);
  // Waits until at least `n` requests are in flight (tests); false on timeout.
  bool wait_until_in_flight(int n, double timeout_s);

 private:
  void notify();

  const int max_;
  std::atomic<int> in_flight_{0};
  std::atomic<bool> draining_{false};
  std::atomic<int> watchers_{0};  // threads waiting on changes (besides a drain)
  std::mutex mutex_;
  std::condition_variable changed_;
};

}  // namespace tessera
