// actgrad_math_sweep: measures every kernels/math policy on every supported
// target over a much denser input set than the unit test, and its in-cache
// throughput; prints the table rows used in docs/math.md.
//
//   actgrad_math_sweep [stride=16] [xmax=16] [policy name, default all]
// GELU policies: every stride-th float (by bit pattern) in [-xmax, xmax]
// plus the specials. Division: every float mantissa of den in [1, 2) with
// 4 numerators each. Timing: ns per element over a 4096-element array in L1
// (informational; noisy on a shared machine).
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "math_eval.h"

using namespace actgrad::math_test;

namespace {

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

double TimeNs(Kind kind, const std::string& name) {
  const size_t n = 4096;
  std::vector<float> x(n), y(n), out(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = -8.0f + 16.0f * float(i) / float(n);
    y[i] = 0.01f + float(i) / float(n);
  }
  double claimed;
  int64_t ran;
  double best = 1e30;
  for (int rep = 0; rep < 7; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < 200; ++it) Eval(kind, name, x.data(), y.data(), out.data(), n, &claimed, &ran);
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / (200.0 * n));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const uint32_t stride = argc > 1 ? uint32_t(std::atoi(argv[1])) : 16;
  const float xmax = argc > 2 ? float(std::atof(argv[2])) : 16.0f;
  const std::string only = argc > 3 ? argv[3] : "";
  uint32_t max_bits;
  std::memcpy(&max_bits, &xmax, 4);

  std::vector<PolicyInfo> policies;
  std::map<std::string, bool> seen;
  ForEachTarget([&](int64_t) {
    for (const auto& p : ListPolicies())
      if (!seen[std::to_string(int(p.kind)) + p.name] && (only.empty() || only == p.name)) {
        seen[std::to_string(int(p.kind)) + p.name] = true;
        policies.push_back(p);
      }
  });
  const auto targets = Targets();

  struct Acc {
    double err = 0;
    float x = 0;
    size_t count = 0, mismatch = 0;
  };
  std::map<std::string, Acc> acc;  // key: policy|target
  auto key = [](const std::string& p, int64_t t) { return p + "|" + TargetLowerName(t); };

  // GELU: chunks of the bit-pattern sweep, both signs.
  const size_t kChunk = 1 << 20;
  std::vector<float> x, out;
  std::vector<double> ref_erf, ref_tanh;
  auto flush = [&]() {
    if (x.empty()) return;
    bool need_erf = false, need_tanh = false;
    for (const auto& p : policies) {
      need_erf |= p.kind == Kind::kGeluErf;
      need_tanh |= p.kind == Kind::kGeluTanh;
    }
    ref_erf.resize(x.size());
    ref_tanh.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      if (need_erf) ref_erf[i] = RefGeluErf(x[i]);
      if (need_tanh) ref_tanh[i] = RefGeluTanh(x[i]);
    }
    out.resize(x.size());
    ForEachTarget([&](int64_t t) {
      for (const auto& p : policies) {
        if (p.kind == Kind::kDiv) continue;
        double claimed;
        int64_t ran;
        if (!Eval(p.kind, p.name, x.data(), nullptr, out.data(), x.size(), &claimed, &ran)) continue;
        const auto& ref = p.kind == Kind::kGeluErf ? ref_erf : ref_tanh;
        Acc& a = acc[key(p.name, t)];
        for (size_t i = 0; i < x.size(); ++i) {
          const double e = GeluErr(out[i], ref[i]);
          if (std::isinf(e)) {
            ++a.mismatch;
            continue;
          }
          if (e > a.err) {
            a.err = e;
            a.x = x[i];
          }
        }
        a.count += x.size();
      }
    });
    x.clear();
  };
  bool any_gelu = false, any_div = false;
  for (const auto& p : policies) (p.kind == Kind::kDiv ? any_div : any_gelu) = true;
  for (uint64_t b = 0; any_gelu && b <= max_bits; b += stride) {
    x.push_back(FromBits(uint32_t(b)));
    x.push_back(-FromBits(uint32_t(b)));
    if (x.size() >= kChunk) flush();
  }
  for (float s : {INFINITY, -INFINITY, NAN, FLT_MAX, -FLT_MAX, 1e10f, -1e10f}) x.push_back(s);
  flush();

  // Division: relative error, normal results.
  if (any_div) {
    std::vector<float> num, den, q;
    const float nums[4] = {1.0f, -1.7f, 0x1.fffffep0f, 1.3333334f};
    for (uint32_t m = 0; m < (1u << 23); ++m)
      for (float nv : nums) {
        num.push_back(nv);
        den.push_back(FromBits(0x3F800000u | m));
      }
    q.resize(num.size());
    ForEachTarget([&](int64_t t) {
      for (const auto& p : policies) {
        if (p.kind != Kind::kDiv) continue;
        double claimed;
        int64_t ran;
        if (!Eval(p.kind, p.name, num.data(), den.data(), q.data(), num.size(), &claimed, &ran)) continue;
        Acc& a = acc[key(p.name, t)];
        for (size_t i = 0; i < num.size(); ++i) {
          const double r = double(num[i]) / double(den[i]);
          const double e = std::fabs(q[i] - r) / std::fabs(r);
          if (e > a.err) {
            a.err = e;
            a.x = den[i];
          }
        }
        a.count += num.size();
      }
    });
  }

  std::printf("stride %u, |x| <= %g\n", stride, double(xmax));
  std::printf("| policy | kind | claimed |");
  for (auto t : targets) std::printf(" %s err | %s ns/elem |", TargetLowerName(t).c_str(), TargetLowerName(t).c_str());
  std::printf("\n");
  for (const auto& p : policies) {
    const char* kinds[] = {"gelu_erf", "gelu_tanh", "div"};
    std::printf("| %s | %s | %.1e |", p.name.c_str(), kinds[int(p.kind)], p.claimed);
    for (auto t : targets) {
      auto it = acc.find(key(p.name, t));
      if (it == acc.end()) {
        std::printf(" - | - |");
        continue;
      }
      ForceTarget(t);
      const double ns = TimeNs(p.kind, p.name);
      ForceTarget(0);
      std::printf(" %.3e%s | %.2f |", it->second.err, it->second.mismatch ? " (SPECIAL MISMATCH)" : "", ns);
    }
    std::printf("\n");
    for (auto t : targets) {
      auto it = acc.find(key(p.name, t));
      if (it != acc.end())
        std::printf("    %s %s: worst at %.9g (%zu points)\n", p.name.c_str(), TargetLowerName(t).c_str(),
                    double(it->second.x), it->second.count);
    }
  }
  return 0;
}
