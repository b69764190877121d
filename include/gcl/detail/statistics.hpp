#pragma once
// Order statistics of measured times: what automatic's race and calibrate summarise their
// samples with. One definition, so that "the median" means the same thing everywhere in gcl.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace gcl::detail {

// The q-th of the sorted times, q in [0, 1], rounding the index down (`below`) or up: the lower
// median is (0.5, below), the quartiles of a race (0.25, below) and (0.75, up). `v` must not be
// empty; it is taken by value because it is sorted.
inline double quantile(std::vector<double> v, double q, bool below = true) {
  std::sort(v.begin(), v.end());
  double const at = q * static_cast<double>(v.size() - 1);
  return v[static_cast<std::size_t>(below ? std::floor(at) : std::ceil(at))];
}

// The middle time, the lower of the two middle ones for an even count: a value that was
// measured, never an average of two.
inline double lower_median(std::vector<double> const& v) {
  return quantile(v, 0.5);
}

}  // namespace gcl::detail
