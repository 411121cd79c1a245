// Placements and the arena that applies them (placement.h).
#include "tools/inputs/placement.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <utility>

#include "tools/inputs/rng.h"
#include "variants/cache.h"

namespace actgrad::inputs {

namespace {
constexpr size_t kHuge = size_t{2} << 20;
size_t RoundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }
}  // namespace

Placement PlacementAt(int k) {
  switch (k) {
    case 0: return {0, 0, 0, 0, 3072};
    case 1: return {1, 64, 64, 0, 3088};
    case 2: return {2, 0, 0, 2048, 3104};
    case 3: return {3, 0, 1344, 2688, 3120};
    default: break;
  }
  Rng r{0x91ACE00ull + uint64_t(k < 0 ? 0 : k)};
  Placement p;
  p.index = k;
  p.g = int64_t(r.Next() % 64) * 64;
  p.x = int64_t(r.Next() % 64) * 64;
  p.out = int64_t(r.Next() % 64) * 64;
  p.stack = int64_t(r.Next() % 256) * 16;
  return p;
}

std::string PlacementLabel(const Placement& p) {
  return "g+" + std::to_string(p.g) + ",x+" + std::to_string(p.x) + ",out+" + std::to_string(p.out) +
         ",sp+" + std::to_string(p.stack);
}

namespace {
// Out of line: its frame is the one RunAtStackOffset positions.
__attribute__((noinline)) void CallBelow(const std::function<void()>& f) { f(); }
}  // namespace

void RunAtStackOffset(const Placement& p, const std::function<void()>& f) {
  // The callee's frame begins a fixed distance below this frame's locals, so
  // moving the locals moves it: pad by how far `here` is above the target
  // residue (alloca rounds to 16, the stack's alignment unit).
  char here;
  const uintptr_t sp = reinterpret_cast<uintptr_t>(&here);
  const size_t target = size_t(p.stack) % kPageBytes / 16 * 16;
  const size_t pad = (sp - target) % kPageBytes;
  volatile char* room = static_cast<volatile char*>(__builtin_alloca(pad + 16));
  room[0] = 0;  // keeps the allocation
  CallBelow(f);
}

PlacedArena::PlacedArena(size_t bytes, size_t x_bytes, const Placement& p) : p_(p) {
  auto offset = [](int64_t o) { return size_t(o) % kPageBytes / kCacheLineBytes * kCacheLineBytes; };
  // Each operand gets its page-aligned region plus one page of slack for its
  // offset; one page between regions keeps the operands on distinct pages.
  const size_t gr = RoundUp(bytes + kPageBytes, kPageBytes) + kPageBytes;
  const size_t xr = RoundUp(x_bytes + kPageBytes, kPageBytes) + kPageBytes;
  const size_t orr = RoundUp(bytes + kPageBytes, kPageBytes);
  size_ = gr + xr + orr;
  const size_t align = size_ >= kHuge ? kHuge : kPageBytes;
  size_ = RoundUp(size_, align);
  void* mem = nullptr;
  if (posix_memalign(&mem, align, size_) != 0) throw std::bad_alloc();
  base_ = static_cast<char*>(mem);
#ifdef MADV_HUGEPAGE
  if (align == kHuge) madvise(base_, size_, MADV_HUGEPAGE);  // a hint; ignored where THP is off
#endif
  g_off_ = offset(p.g);
  x_off_ = gr + offset(p.x);
  out_off_ = gr + xr + offset(p.out);
}

PlacedArena::PlacedArena(PlacedArena&& o) noexcept { *this = std::move(o); }

PlacedArena& PlacedArena::operator=(PlacedArena&& o) noexcept {
  if (this != &o) {
    std::free(base_);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    g_off_ = o.g_off_;
    x_off_ = o.x_off_;
    out_off_ = o.out_off_;
    p_ = o.p_;
  }
  return *this;
}

PlacedArena::~PlacedArena() { std::free(base_); }

}  // namespace actgrad::inputs
