#include "variants/cache.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

namespace actgrad {

size_t ParseCacheSize(std::string_view s) {
  const std::string text(s);
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  const int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
  return size_t(v) << shift;
}

int CountCpuList(std::string_view s) {
  int count = 0;
  size_t i = 0;
  const auto number = [&](long* v) {
    const size_t start = i;
    *v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - start < 9) *v = *v * 10 + (s[i++] - '0');
    return i > start;
  };
  while (i < s.size() && s[i] != '\n') {
    long lo = 0, hi = 0;
    if (!number(&lo)) return 0;
    hi = lo;
    if (i < s.size() && s[i] == '-' && (++i, !number(&hi))) return 0;
    if (hi < lo) return 0;
    count += int(hi - lo + 1);
    if (i < s.size() && s[i] == ',') ++i;
    else if (i < s.size() && s[i] != '\n') return 0;
  }
  return count;
}

std::vector<CacheLevel> ReadCacheLevels(const std::string& dir) {
  std::vector<CacheLevel> levels;
  for (int i = 0; i < 16; ++i) {
    const std::string index = dir + "/index" + std::to_string(i) + "/";
    std::ifstream level_file(index + "level"), type_file(index + "type"), size_file(index + "size"),
        shared_file(index + "shared_cpu_list");
    CacheLevel c;
    if (!(level_file >> c.level)) break;
    std::string size, shared;
    type_file >> c.type;
    if (size_file >> size) c.bytes = ParseCacheSize(size);
    if (shared_file >> shared) c.shared_cpus = CountCpuList(shared);
    levels.push_back(c);
  }
  return levels;
}

size_t L2CacheBytes() {
  static const size_t bytes = [] {
    const long b = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return b > 0 ? size_t(b) : kFallbackL2Bytes;
  }();
  return bytes;
}

namespace {

// The last level ReadCacheLevels lists (the largest of its highest level);
// bytes 0 where /sys lists none.
CacheLevel LastLevel() {
  CacheLevel best;
  for (const CacheLevel& c : ReadCacheLevels()) {
    if (c.bytes == 0) continue;
    if (c.level > best.level || (c.level == best.level && c.bytes > best.bytes)) best = c;
  }
  return best;
}

}  // namespace

size_t LastLevelCacheBytes() {
  static const size_t bytes = [] {
    if (const CacheLevel last = LastLevel(); last.bytes > 0) return last.bytes;
    const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    return l3 > 0 ? size_t(l3) : L2CacheBytes();
  }();
  return bytes;
}

size_t LastLevelCachePartBytes() {
  static const size_t bytes = [] {
    int sharing = LastLevel().shared_cpus;
    if (sharing <= 0) sharing = int(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
    return LastLevelCacheBytes() / size_t(sharing);
  }();
  return bytes;
}

}  // namespace actgrad
