// A host buffer with guard bytes on both sides, for the fuzz targets. The
// guards hold a pattern and are poisoned for ASan, so any read or write of
// them reports at once with a stack; GuardsIntact() catches writes in a build
// without ASan too. The data is 64-byte aligned, like aclrtMalloc's.
#pragma once

#include <sanitizer/asan_interface.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

// The harness's own loops over buffers: no coverage feedback (it says nothing
// about the library, and tracing every compare made the target 3x slower).
#define FUZZ_NO_COVERAGE __attribute__((no_sanitize("coverage")))

namespace fuzzapi {

class GuardedBuffer {
 public:
  static constexpr size_t kGuard = 64;
  static constexpr uint8_t kPattern = 0xA5;

  // bytes of data filled with a pseudo-random pattern from seed.
  FUZZ_NO_COVERAGE GuardedBuffer(size_t bytes, uint32_t seed) : size_(bytes) {
    total_ = (kGuard + bytes + kGuard + 63) / 64 * 64;
    mem_ = static_cast<uint8_t*>(std::aligned_alloc(64, total_));
    if (!mem_) std::abort();
    std::memset(mem_, kPattern, total_);
    uint32_t s = seed * 2654435761u + 1;
    for (size_t i = 0; i < bytes; ++i) {  // xorshift: varied values, NaNs and denormals included
      s ^= s << 13, s ^= s >> 17, s ^= s << 5;
      data()[i] = uint8_t(s);
    }
    ASAN_POISON_MEMORY_REGION(mem_, kGuard);
    ASAN_POISON_MEMORY_REGION(data() + bytes, total_ - kGuard - bytes);
  }
  ~GuardedBuffer() {
    ASAN_UNPOISON_MEMORY_REGION(mem_, total_);
    std::free(mem_);
  }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  uint8_t* data() const { return mem_ + kGuard; }
  size_t size() const { return size_; }
  std::vector<uint8_t> Snapshot() const { return std::vector<uint8_t>(data(), data() + size_); }

  FUZZ_NO_COVERAGE bool GuardsIntact() const {
    ASAN_UNPOISON_MEMORY_REGION(mem_, total_);
    bool ok = true;
    for (size_t i = 0; i < total_; ++i)
      if ((i < kGuard || i >= kGuard + size_) && mem_[i] != kPattern) ok = false;
    ASAN_POISON_MEMORY_REGION(mem_, kGuard);
    ASAN_POISON_MEMORY_REGION(data() + size_, total_ - kGuard - size_);
    return ok;
  }

 private:
  uint8_t* mem_ = nullptr;
  size_t size_ = 0, total_ = 0;
};

}  // namespace fuzzapi
