#pragma once

// The drawing rules every tessera chart shares, so charts read alike across panels and
// pages:
//  - Palette: the Okabe–Ito colour-blind-safe colours; a series keeps its colour by name
//    (fixed colours for the standard outcome series and search spaces, the rest in order
//    of first use), so "goodput" or "A+S" is the same colour in every panel that shows it.
//  - nice_ticks(): axis ticks at 1, 2 or 5 x 10^k; log_ticks() for logarithmic axes.
//  - format_tick(): tick text with just the decimals the step needs (20k for 20000).
//  - shorten_labels(): labels too long for their space become a prefix and a key number,
//    with the key ("[1] full label") listed under the chart.
//  - text_width(): an estimate of rendered text width, to lay labels out without overflow.
//  - xml_escape(): text for SVG/HTML.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace tessera {

class Palette {
 public:
  // The colour of series `key`: fixed for known names, else the colour used least so far
  // (the first in palette order among equals), so a task never shares "goodput"'s green
  // on a page that shows both.
  std::string color_for(const std::string& key);
  // A dash pattern for a key whose colour was already taken when it was assigned (empty
  // otherwise), so keys beyond the palette still differ.
  std::string dash_for(const std::string& key);

 private:
  struct Entry {
    std::size_t color = 0;
    std::size_t cycle = 0;  // how many keys had this colour before
  };
  std::map<std::string, Entry> assigned_;
  std::map<std::size_t, std::size_t> uses_;  // colour index -> keys given it
};

std::vector<double> nice_ticks(double lo, double hi, int target = 5);
std::vector<double> log_ticks(double lo, double hi);
std::string format_tick(double value, double step);
std::string format_value(double value);  // 3 significant digits, for bar values

struct ShortLabels {
  std::vector<std::string> shown;  // one per label
  std::vector<std::string> key;    // "[n] full label" lines, empty when nothing was cut
};
ShortLabels shorten_labels(const std::vector<std::string>& labels, std::size_t max_chars);

double text_width(const std::string& text, double font_size);
std::string xml_escape(const std::string& s);

}  // namespace tessera
