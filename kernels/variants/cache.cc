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

std::vector<CacheLevel> ReadCacheLevels(const std::string& dir) {
  std::vector<CacheLevel> levels;
  for (int i = 0; i < 16; ++i) {
    const std::string index = dir + "/index" + std::to_string(i) + "/";
    std::ifstream level_file(index + "level"), type_file(index + "type"), size_file(index + "size");
    CacheLevel c;
    if (!(level_file >> c.level)) break;
    std::string size;
    type_file >> c.type;
    if (size_file >> size) c.bytes = ParseCacheSize(size);
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

size_t LastLevelCacheBytes() {
  static const size_t bytes = [] {
    int best_level = 0;
    size_t best = 0;
    for (const CacheLevel& c : ReadCacheLevels()) {
      if (c.bytes == 0) continue;
      if (c.level > best_level) best_level = c.level, best = c.bytes;
      else if (c.level == best_level) best = std::max(best, c.bytes);
    }
    if (best > 0) return best;
    const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    return l3 > 0 ? size_t(l3) : L2CacheBytes();
  }();
  return bytes;
}

}  // namespace actgrad
