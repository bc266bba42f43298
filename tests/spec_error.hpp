#pragma once

// Catching the SpecError a call must throw, for the tests of every spec reader.

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace tessera::testing {

// Runs `fn`, which must throw a SpecError, and returns it.
template <typename Fn>
SpecError spec_error(Fn fn) {
  try {
    fn();
  } catch (const SpecError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a SpecError";
  return SpecError("", "", "");
}

}  // namespace tessera::testing
