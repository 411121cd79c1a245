#include "tools/tune/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace actgrad::tune {

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const size_t lo = size_t(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
}

double Median(const std::vector<double>& v) { return Quantile(v, 0.5); }

double SpreadPct(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double m = Median(v);
  if (!(m > 0)) return 0.0;
  return 100.0 * 0.5 * (Quantile(v, 0.75) - Quantile(v, 0.25)) / m;
}

double GeoMean(const std::vector<double>& v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / double(v.size()));
}

double MannWhitneyLessP(const std::vector<double>& a, const std::vector<double>& b) {
  const size_t n1 = a.size(), n2 = b.size();
  if (n1 == 0 || n2 == 0) return 1.0;
  // Ranks of the pooled sample (average ranks for ties).
  std::vector<std::pair<double, int>> all;
  for (double x : a) all.push_back({x, 0});
  for (double x : b) all.push_back({x, 1});
  std::sort(all.begin(), all.end(), [](const auto& l, const auto& r) { return l.first < r.first; });
  const size_t n = all.size();
  double rank_a = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && all[j + 1].first == all[i].first) ++j;
    const double avg = 0.5 * double(i + j) + 1.0;
    const double t = double(j - i + 1);
    if (t > 1) ties = true, tie_term += t * t * t - t;
    for (size_t k = i; k <= j; ++k)
      if (all[k].second == 0) rank_a += avg;
    i = j + 1;
  }
  // U_a = number of pairs (x in a, y in b) with x > y (+ half the ties):
  // small U_a supports H1 (a smaller).
  const double u = rank_a - double(n1) * double(n1 + 1) / 2.0;
  if (!ties && n1 <= 30 && n2 <= 30) {
    // Exact: count arrangements with U <= u. f[i][j][s]: ways for i a's and
    // j b's to reach U = s; built by adding the largest element.
    const int umax = int(n1 * n2);
    const int target = int(std::floor(u + 1e-9));
    std::vector<std::vector<double>> prev(n2 + 1, std::vector<double>(umax + 1, 0.0));
    // prev = f[i-1][.][.]; cur = f[i][.][.]
    for (size_t j = 0; j <= n2; ++j) prev[j][0] = 1.0;  // i = 0: one way, U = 0
    for (size_t i = 1; i <= n1; ++i) {
      std::vector<std::vector<double>> cur(n2 + 1, std::vector<double>(umax + 1, 0.0));
      for (size_t j = 0; j <= n2; ++j)
        for (int s = 0; s <= umax; ++s) {
          // largest is an a: it beats all j b's -> U grows by j
          double w = (s >= int(j)) ? prev[j][s - int(j)] : 0.0;
          // largest is a b: U unchanged
          if (j > 0) w += cur[j - 1][s];
          cur[j][s] = w;
        }
      prev.swap(cur);
    }
    double total = 0, le = 0;
    for (int s = 0; s <= umax; ++s) {
      total += prev[n2][s];
      if (s <= target) le += prev[n2][s];
    }
    return std::min(1.0, le / total);
  }
  const double mu = double(n1) * double(n2) / 2.0;
  const double var = double(n1) * double(n2) / 12.0 * ((double(n) + 1.0) - tie_term / (double(n) * (double(n) - 1.0)));
  if (var <= 0) return u < mu ? 0.0 : 1.0;
  const double z = (u - mu + 0.5) / std::sqrt(var);  // continuity correction toward H0
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

}  // namespace actgrad::tune
