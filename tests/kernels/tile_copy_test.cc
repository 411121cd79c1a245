// CopyTile (kernels/variants/tile_copy.h) against the scalar definition
// dst[r * nc + c] = src[r * rs + c * cs]: every esize, every path (rows
// contiguous, transposed, negative and arbitrary strides), many shapes, on
// every Highway target this CPU supports, with guard elements on both sides
// of dst (nothing beyond the nr * nc elements is written); CopyTileTo likewise
// into rows ld elements apart, the gaps between them untouched.
#include "variants/tile_copy.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace actgrad {
namespace {

constexpr int64_t kGuard = 37;  // elements each side of dst (odd: dst is misaligned for vectors)
constexpr unsigned char kGuardByte = 0xA5;

struct Shape {
  int64_t nr, nc;
};
const Shape kShapes[] = {{1, 1},   {3, 5},   {4, 4},   {7, 9},     {8, 8},    {16, 16}, {17, 33},
                         {64, 64}, {65, 130}, {1, 200}, {200, 1}, {16, 7}, {31, 64}, {33, 8}};

// The stride pairs (rs, cs) checked for a shape.
std::vector<std::pair<int64_t, int64_t>> Strides(int64_t nr, int64_t nc) {
  return {
      {1, nr},            {1, nr + 3},        {1, nr + 64},       {1, 2 * nr + 17},  // transposed
      {nc, 1},            {nc + 5, 1},        {2 * nc, 1},                           // rows contiguous
      {-1, nr},           {1, -nr},           {-1, -(nr + 2)},                       // negative, transposed
      {-nc, 1},           {-(nc + 3), 1},     {nc, -1},           {-nc, -1},          // negative, rows
      {3, 7 * nr + 1},    {7, 2},             {2, 3 * nr},        {0, 0},            // arbitrary, broadcast
      {0, 1},             {1, 0},             {nc * 2, 2},        {-5, 11},
  };
}

int64_t Reference(int64_t r, int64_t c, int64_t rs, int64_t cs) { return r * rs + c * cs; }

// ld = 0: CopyTile (rows nc apart); else CopyTileTo with rows ld apart.
void CheckOne(int64_t nr, int64_t nc, int64_t rs, int64_t cs, size_t esize, std::mt19937& rng,
              const std::string& target, int64_t ld = 0) {
  SCOPED_TRACE(target + " esize " + std::to_string(esize) + " shape " + std::to_string(nr) + "x" +
               std::to_string(nc) + " rs " + std::to_string(rs) + " cs " + std::to_string(cs) + " ld " +
               std::to_string(ld));
  // Source extent: the smallest and largest offsets over the corners.
  int64_t lo = 0, hi = 0;
  for (int64_t r : {int64_t(0), nr - 1})
    for (int64_t c : {int64_t(0), nc - 1}) {
      lo = std::min(lo, Reference(r, c, rs, cs));
      hi = std::max(hi, Reference(r, c, rs, cs));
    }
  // A few elements of slack each side; the origin misaligned by one element.
  const int64_t src_elems = hi - lo + 1 + 8;
  std::vector<unsigned char> src_buf(size_t(src_elems) * esize + 64);
  for (auto& b : src_buf) b = static_cast<unsigned char>(rng());
  const size_t origin = (size_t(-lo) + 1 + 4) * esize;  // element index of offset 0, within slack
  const unsigned char* src = src_buf.data() + origin;

  const int64_t row = ld ? ld : nc;
  const int64_t n = (nr - 1) * row + nc;  // dst's extent
  std::vector<unsigned char> dst_buf(size_t(n + 2 * kGuard) * esize, kGuardByte);
  unsigned char* dst = dst_buf.data() + kGuard * int64_t(esize);
  if (ld) CopyTileTo(dst, ld, src, rs, cs, nr, nc, esize);
  else CopyTile(dst, src, rs, cs, nr, nc, esize);

  for (size_t i = 0; i < size_t(kGuard) * esize; ++i) {
    ASSERT_EQ(dst_buf[i], kGuardByte) << "guard byte " << i << " before dst written";
    ASSERT_EQ(dst_buf[dst_buf.size() - 1 - i], kGuardByte) << "guard byte " << i << " after dst written";
  }
  for (int64_t r = 0; r < nr; ++r) {
    for (int64_t c = 0; c < nc; ++c) {
      const unsigned char* want = src + Reference(r, c, rs, cs) * int64_t(esize);
      const unsigned char* got = dst + (r * row + c) * int64_t(esize);
      ASSERT_EQ(std::memcmp(want, got, esize), 0) << "element r=" << r << " c=" << c;
    }
    for (int64_t c = nc; c < row && r + 1 < nr; ++c)  // the gap after the row
      for (size_t b = 0; b < esize; ++b)
        ASSERT_EQ(dst[(r * row + c) * int64_t(esize) + int64_t(b)], kGuardByte) << "gap r=" << r << " c=" << c;
  }
}

class TileCopy : public ::testing::Test {
 protected:
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }
};

TEST_F(TileCopy, MatchesTheScalarDefinitionOnEveryTarget) {
  std::mt19937 rng(12345);
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  for (int64_t t : targets) {
    hwy::SetSupportedTargetsForTest(t);
    const std::string name = hwy::TargetName(t);
    for (size_t esize : {size_t(4), size_t(2), size_t(1)})
      for (const Shape& s : kShapes)
        for (auto [rs, cs] : Strides(s.nr, s.nc)) {
          CheckOne(s.nr, s.nc, rs, cs, esize, rng, name);
          if (HasFatalFailure()) return;
        }
  }
}

// Every transposed block size and edge combination around the block sizes (4, 8, 16).
TEST_F(TileCopy, TransposedEdges) {
  std::mt19937 rng(777);
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(t);
    const std::string name = hwy::TargetName(t);
    for (size_t esize : {size_t(4), size_t(2)})
      for (int64_t nr = 1; nr <= 35; ++nr)
        for (int64_t nc : {1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 24, 31, 33}) {
          CheckOne(nr, nc, 1, nr, esize, rng, name);
          CheckOne(nr, nc, 1, nr + 5, esize, rng, name);
          if (HasFatalFailure()) return;
        }
  }
}

// CopyTileTo: the same copies into rows further apart than nc (a result tile
// written back into out's rows), the gaps untouched.
TEST_F(TileCopy, IntoRowsFurtherApart) {
  std::mt19937 rng(4242);
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(t);
    const std::string name = hwy::TargetName(t);
    for (size_t esize : {size_t(4), size_t(2), size_t(1)})
      for (const Shape& s : kShapes)
        for (int64_t ld : {s.nc, s.nc + 3, 2 * s.nc + 16})
          for (auto [rs, cs] : {std::pair<int64_t, int64_t>{1, s.nr}, {1, s.nr + 5}, {s.nc, 1}, {s.nc + 2, 1},
                                {-1, s.nr}, {3, 7 * s.nr + 1}}) {
            CheckOne(s.nr, s.nc, rs, cs, esize, rng, name, ld);
            if (HasFatalFailure()) return;
          }
  }
}

// The scalar reference entry point agrees with CopyTile.
TEST_F(TileCopy, ScalarEntryPointAgrees) {
  std::vector<uint32_t> src(64 * 80), a(64 * 64, 1), b(64 * 64, 2);
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint32_t(i * 2654435761u);
  CopyTile(a.data(), src.data(), 1, 80, 64, 64, 4);
  CopyTileScalar(b.data(), src.data(), 1, 80, 64, 64, 4);
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace actgrad
