#include "tiling/choice.h"

#include <cstdint>
#include <vector>

#include "variants/thread_pool.h"

namespace actgrad {

std::string Choice::Key() const {
  std::string k = variant + "|t" + std::to_string(split.threads) + "|c" + std::to_string(split.chunk) + "|s" +
                  std::to_string(split.stage_tile);
  if (split.tile_rows || split.tile_cols)  // keys without a tile stay as they were
    k += "|r" + std::to_string(split.tile_rows) + "x" + std::to_string(split.tile_cols);
  if (split.transpose_result) k += "|tr";
  return k;
}

namespace {

// A whole decimal integer (an optional '-', then digits) from s[from..].
bool ReadInt(const std::string& s, size_t from, int64_t* v) {
  if (from >= s.size()) return false;
  size_t i = from;
  const bool neg = s[i] == '-';
  if (neg) ++i;
  if (i == s.size() || i - from > 19) return false;
  int64_t x = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9' || x > (INT64_MAX - (s[i] - '0')) / 10) return false;
    x = x * 10 + (s[i] - '0');
  }
  *v = neg ? -x : x;
  return true;
}

}  // namespace

bool ParseChoiceKey(const std::string& key, Choice* out) {
  std::vector<std::string> parts(1);
  for (char c : key) {
    if (c == '|') parts.emplace_back();
    else parts.back() += c;
  }
  int64_t t = 0;
  Choice c;
  c.variant = parts[0];
  if (parts.size() < 4 || c.variant.empty() || parts[1].rfind('t', 0) != 0 || !ReadInt(parts[1], 1, &t) ||
      t < INT32_MIN || t > INT32_MAX || parts[2].rfind('c', 0) != 0 || !ReadInt(parts[2], 1, &c.split.chunk) ||
      parts[3].rfind('s', 0) != 0 || !ReadInt(parts[3], 1, &c.split.stage_tile))
    return false;
  c.split.threads = int(t);
  for (size_t i = 4; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    const size_t x = p.find('x');
    if (p == "tr" && !c.split.transpose_result) {
      c.split.transpose_result = true;
    } else if (i == 4 && p.rfind('r', 0) == 0 && x != std::string::npos) {
      if (!ReadInt(p.substr(0, x), 1, &c.split.tile_rows) || !ReadInt(p, x + 1, &c.split.tile_cols)) return false;
    } else {
      return false;
    }
  }
  *out = c;
  return true;
}

KernelChoice Resolve(const Choice& c, bool from_table) {
  KernelChoice k;
  const Variant* v = FindVariant(c.variant);
  k.variant = v && v->supported ? v : nullptr;
  k.split = c.split;
  k.from_table = from_table;
  return k;
}

Choice DefaultChoice(Op op, DType dtype, GeluApprox mode, uint64_t n, AccuracyClass cls) {
  return DefaultChoice(op, dtype, mode, n, cls, [](const Variant& v) { return v.supported; });
}

Choice DefaultChoice(Op op, DType dtype, GeluApprox mode, uint64_t n, AccuracyClass cls,
                     const std::function<bool(const Variant&)>& runs) {
  Choice c;
  if (const Variant* v = DefaultVariant(op, dtype, mode, cls, runs)) c.variant = v->name;
  c.split.threads = kDefaultThreadRule.Threads(n, MaxThreads());
  return c;
}

}  // namespace actgrad
