// Where the operands of one measurement sit in memory: a Placement gives each
// operand (g, x, out) a byte offset inside its 4 KiB page, and the stack of
// the measuring thread an offset too; PlacedArena puts the operands at those
// offsets inside one allocation, RunAtStackOffset runs a measurement with the
// stack pointer at that offset.
//
// Why: the speed of a streaming kernel can depend on where its buffers land
// relative to each other (4K aliasing between a load and an earlier store,
// cache-set conflicts) and on where the stack of the calling thread sits
// (PyTorch's and oneDNN's GELU backward run 2x slower or faster with the
// stack pointer 16 bytes apart, and address-space randomisation places the
// main thread's stack at a random multiple of 16 bytes in every process:
// docs/performance.md, "Placements"), so a figure taken on one layout can be luck
// (Mytkowicz et al., ASPLOS 2009). The benchmarks and the tuner measure on
// several placements of the documented set below, ours and the peers on the
// same ones, and report the median and the spread over them
// (docs/performance.md, "Placements").
//
// Used by the benchmarks and the tuner; the library never includes it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace actgrad::inputs {

// The page the placements' offsets lie in (the 4 KiB base page of x86-64 and
// of the Arm kernels the suite runs on): the tools' one home of it.
inline constexpr size_t kPageBytes = 4096;

// Byte offsets of each operand from the start of a 4 KiB page: multiples of
// 64 (whole cache lines, every SIMD width aligned) in [0, 4096); `stack`:
// the offset of the measuring thread's stack pointer within a 4 KiB page at
// the entry of RunAtStackOffset's callee, a multiple of 16 in [0, 4096).
struct Placement {
  int index = 0;  // its number in the documented set (PlacementAt), -1 for a custom one
  int64_t g = 0, x = 0, out = 0;
  int64_t stack = 0;
  bool operator==(const Placement&) const = default;
};

// The documented set, the same on every machine and in every process
// (g, x, out; stack):
//   0: (0, 0, 0; 3072) g, x and out all at offset 0 of their pages (what a
//      page-aligned allocator gives: every load of g[i] and x[i] at the same
//      address bits 11..0 as the store of out[i]);
//   1: (64, 64, 0; 3088) g and x one cache line after out: the store of
//      out[i] has the address bits 11..0 of the loads of g and x 64 bytes
//      later, the classic 4K-aliasing case of a streaming loop;
//   2: (0, 0, 2048; 3104) out half a page after g and x;
//   3: (0, 1344, 2688; 3120) g, x and out spread over the page;
//   the stack offsets of 0..3 are 0, 16, 32 and 48 bytes past 3072, every
//   residue of the stack pointer modulo 64 that a 16-byte aligned ABI allows;
//   4 and up: offsets drawn with inputs::Rng (seed 0x91ACE00 + k), each a
//      multiple of 64 in [0, 4096), the stack a multiple of 16.
Placement PlacementAt(int k);

// How many placements the benchmarks and the tuner use unless told otherwise.
inline constexpr int kDefaultPlacements = 4;

// "g+0,x+0,out+64,sp+3072" (bytes from the page start).
std::string PlacementLabel(const Placement& p);

// Calls f() with the stack pointer moved down so that f's frame starts at
// p.stack bytes (mod 4096, plus a constant of the binary) past a page
// boundary: the same stack position in every process, whatever address-space
// randomisation did, and placements whose `stack` differ by d bytes run d
// bytes apart. Ours and the
// peers are timed inside it (the timed loop, not only the call).
void RunAtStackOffset(const Placement& p, const std::function<void()>& f);

// One allocation holding three operands of `bytes` bytes each (x may be
// smaller: x_bytes), each starting at its placement offset inside its own
// page-aligned region. Regions are apart by whole pages plus a gap of one
// page, so the offsets within a page are exactly the placement's and the
// operands never share a page. Untouched memory is not zeroed; the caller
// fills the operands. Large arenas (>= 2 MiB) are 2 MiB aligned and asked
// to be backed by transparent huge pages (madvise), so that the physical
// layout within 2 MiB is the virtual one where the kernel grants them.
class PlacedArena {
 public:
  PlacedArena() = default;
  PlacedArena(size_t bytes, size_t x_bytes, const Placement& p);
  PlacedArena(const PlacedArena&) = delete;
  PlacedArena& operator=(const PlacedArena&) = delete;
  PlacedArena(PlacedArena&& o) noexcept;
  PlacedArena& operator=(PlacedArena&& o) noexcept;
  ~PlacedArena();

  void* g() const { return base_ + g_off_; }
  void* x() const { return base_ + x_off_; }
  void* out() const { return base_ + out_off_; }
  const Placement& placement() const { return p_; }
  size_t reserved_bytes() const { return size_; }

 private:
  char* base_ = nullptr;
  size_t size_ = 0;
  size_t g_off_ = 0, x_off_ = 0, out_off_ = 0;
  Placement p_;
};

}  // namespace actgrad::inputs
