#include "serve/http/admission.hpp"

#include <chrono>
#include <utility>

namespace tessera {

Admission::Ticket::Ticket(Admission& admission, int n)
    : admission_(&admission), n_(n), count_(admission.in_flight_.fetch_add(n) + n) {
  if (admission.watchers_.load() > 0) admission.notify();
}

Admission::Ticket::Ticket(Ticket&& other) noexcept
    : admission_(std::exchange(other.admission_, nullptr)),
      n_(std::exchange(other.n_, 0)),
      count_(other.count_) {}

Admission::Ticket& Admission::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    release();
    admission_ = std::exchange(other.admission_, nullptr);
    n_ = std::exchange(other.n_, 0);
    count_ = other.count_;
  }
  return *this;
}

bool Admission::Ticket::over_limit() const {
  return admission_ != nullptr && count_ > admission_->max_;
}

void Admission::Ticket::release() {
  Admission* a = std::exchange(admission_, nullptr);
  if (a == nullptr) return;
  const bool last = a->in_flight_.fetch_sub(n_) == n_;
  if ((last && a->draining_.load()) || a->watchers_.load() > 0) a->notify();
}

void Admission::notify() {
  std::lock_guard lock(mutex_);
  changed_.notify_all();
}

bool Admission::drain(double timeout_s) {
  draining_.store(true);
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                           [this] { return in_flight_.load() == 0; });
}

bool Admission::wait_until_in_flight(int n, double timeout_s) {
  watchers_.fetch_add(1);
  std::unique_lock lock(mutex_);
  const bool ok = changed_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                                    [&] { return in_flight_.load() >= n; });
  lock.unlock();
  watchers_.fetch_sub(1);
  return ok;
}

}  // namespace tessera
