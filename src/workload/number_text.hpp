#pragma once

#include <sstream>
#include <string>

namespace tessera {

// A number as a short human-readable string for describe() lines: "100", "0.25", "1e+06".
inline std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace tessera
