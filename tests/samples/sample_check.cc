// Reads a sample's output on stdin, echoes it, and compares every
// "result[i] is: V" line with the expected values in argv[1] (one per line,
// '#' comments; inf / -inf / nan compared as such). Tolerance: the spec's
// fp32 hard bound (1e-3 relative, floor 1/16) plus the 6-decimal print.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: sample_check <expected file> < sample output\n";
    return 2;
  }
  std::ifstream ef(argv[1]);
  if (!ef) {
    std::cerr << "cannot open " << argv[1] << "\n";
    return 2;
  }
  std::vector<std::string> expected;
  for (std::string line; std::getline(ef, line);) {
    if (line.empty() || line[0] == '#') continue;
    expected.push_back(line.substr(0, line.find_first_of(" \t#")));
  }
  std::vector<std::string> got;
  for (std::string line; std::getline(std::cin, line);) {
    std::cout << line << "\n";
    int idx = -1;
    char val[64] = {0};
    if (std::sscanf(line.c_str(), "result[%d] is: %63s", &idx, val) == 2) {
      if (idx != int(got.size())) {
        std::cerr << "FAIL: result index " << idx << " out of order\n";
        return 1;
      }
      got.push_back(val);
    }
  }
  if (got.size() != expected.size()) {
    std::cerr << "FAIL: " << got.size() << " results printed, " << expected.size() << " expected\n";
    return 1;
  }
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double want = std::strtod(expected[i].c_str(), nullptr);
    const double have = std::strtod(got[i].c_str(), nullptr);
    bool ok;
    if (std::isnan(want)) ok = std::isnan(have);
    else if (std::isinf(want)) ok = have == want;
    else ok = std::isfinite(have) && std::fabs(have - want) <= 1e-3 * std::max(std::fabs(want), 0.0625) + 1e-6;
    if (!ok) {
      std::cerr << "FAIL: result[" << i << "] is " << got[i] << ", expected " << expected[i] << "\n";
      ++bad;
    }
  }
  if (bad) return 1;
  std::cout << "sample_check: " << got.size() << " results match\n";
  return 0;
}
