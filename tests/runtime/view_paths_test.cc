// Phase two's view paths (runtime/plan.h PlanPath), every op
// and dtype against the double reference:
//  kFlat   contiguous operands at offsets, fully reversed views;
//  kRuns   inner-run views (4-d with two outer dims swapped, slices of larger
//          storages, out itself such a view), row broadcasts and stride-0
//          inputs (splat), transposed / stepped / reversed inputs (gathered
//          tile by tile, partial tiles on every edge), out transposed or
//          reversed, in-place;
//  kBuffered runs shorter than kMinRunBytes (inner 3, 5, 15, ...), many rows;
//          GELU's dtype promotion.
// Each case states the path (and each input's kind on kRuns: plain, splat or
// gathered) phase one must plan, read from the executor's plan, so a size
// that silently fell back to kBuffered fails here; then checks the values
// against the reference and that nothing outside the output view (storages
// have room around every view) was written. Large cases take the threaded
// path; forced splits (ScopedKernelOverride) take it, odd tiles and chunks
// at small sizes; every runnable variant runs on runs, splats, gathered tiles
// and in place, bit for bit as on contiguous copies; a repeatable executor
// runs a view plan several times.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include "api_test_util.h"
#include "runtime/objects.h"  // aclOpExecutor::plan: the path phase one planned
#include "runtime/row_walker.h"
#include "tiling/dispatch.h"  // ScopedKernelOverride
#include "variants/variant.h"

namespace apitest {
namespace {

using actgrad::rt::Plan;
using actgrad::rt::PlanPath;

// A view of dims with the given strides (elements, any sign, 0 allowed) over
// a 1-D storage with `front` elements before the lowest element the view
// reaches and `back` after the highest: room around the view.
Tensor Strided(DType t, const Dims& dims, const Dims& strides, int64_t front = 5, int64_t back = 7) {
  int64_t neg = 0, pos = 0;
  for (size_t i = 0; i < dims.size(); ++i) (strides[i] < 0 ? neg : pos) += (dims[i] - 1) * std::abs(strides[i]);
  const int64_t offset = front + neg;
  return Tensor(t, dims, strides, offset, {offset + pos + 1 + back});
}
// Contiguous, with room around it.
Tensor Roomy(DType t, const Dims& dims, int64_t front = 3, int64_t back = 9) {
  return Strided(t, dims, ContiguousStrides(dims), front, back);
}
// [b, 4, 4, c] with dims 1 and 2 swapped (the benchmark's strided view): a
// [b, 4, 4, c] storage read as strides (16c, c, 4c, 1); runs of c elements.
Tensor Swapped4D(DType t, int64_t b, int64_t c, int64_t front = 5) {
  return Strided(t, {b, 4, 4, c}, {16 * c, c, 4 * c, 1}, front);
}
// [rows, cols] rows of a [.., width] storage from (row0, col0).
Tensor Slice2D(DType t, int64_t rows, int64_t cols, int64_t width, int64_t row0, int64_t col0) {
  return Strided(t, {rows, cols}, {width, 1}, row0 * width + col0, width + 3);
}
// [a, b] viewed over a [b, a] storage (its transpose): strides (1, a).
Tensor Transposed(DType t, int64_t a, int64_t b, int64_t front = 5) { return Strided(t, {a, b}, {1, a}, front); }

size_t Esize(DType t) { return ElemSize(AclType(t)); }

// ------------------------------------------------------------- plans

const char* PathName(PlanPath p) {
  switch (p) {
    case PlanPath::kFlat: return "kFlat";
    case PlanPath::kRuns: return "kRuns";
    case PlanPath::kBuffered: return "kBuffered";
  }
  return "?";
}

// How a kRuns plan reads an input: by its runs in place (inner stride 1),
// as a splat per run (stride 0), or gathered tile by tile (any other stride;
// kInconsistent: the plan's `gathered` flag says otherwise).
enum class In { kAny, kPlain, kSplat, kGathered, kInconsistent };
const char* InName(In k) {
  switch (k) {
    case In::kAny: return "any";
    case In::kPlain: return "plain";
    case In::kSplat: return "splat";
    case In::kGathered: return "gathered";
    case In::kInconsistent: return "inconsistent (gathered flag vs inner stride)";
  }
  return "?";
}

// What phase one planned, copied out of the executor before phase two.
struct Seen {
  PlanPath path = PlanPath::kFlat;
  int ndim = 0;
  int64_t shape[actgrad::rt::kMaxDims] = {};
  In g = In::kAny, x = In::kAny;
  int64_t tile_rows = 0, tile_cols = 0;
  bool transpose_result = false;  // Plan::transpose_result
  int threads = 0;
  std::string variant;
  // The walk (kRuns): each operand's stride per plan dim, and the plan's
  // verdict that every non-splat input steps forward through memory.
  int64_t strides[3][actgrad::rt::kMaxDims] = {};
  bool inputs_in_order = false;
  // Tiles that end inside the plan's inner dim / its rows (kRuns).
  bool PartialCols() const { return shape[ndim - 1] % tile_cols != 0; }
  bool PartialRows() const {
    const int64_t rows = ndim >= 2 ? shape[ndim - 2] : 1;
    return rows % tile_rows != 0;
  }
  std::string Describe() const {
    std::ostringstream os;
    os << PathName(path) << " shape [";
    for (int i = 0; i < ndim; ++i) os << (i ? "," : "") << shape[i];
    os << "] g " << InName(g) << " x " << InName(x) << " tile " << tile_rows << "x" << tile_cols
       << (transpose_result ? " (result transposed)" : "") << " threads "
       << threads << " variant " << variant;
    return os.str();
  }
};

In KindOf(const Plan& p, const actgrad::rt::OperandView& v) {
  const int64_t s = v.strides[p.ndim - 1];
  const In k = s == 0 ? In::kSplat : s == 1 ? In::kPlain : In::kGathered;
  return (k == In::kGathered) == v.gathered ? k : In::kInconsistent;
}

Seen Observe(const Plan& p) {
  Seen s;
  s.path = p.path;
  s.ndim = p.ndim;
  for (int i = 0; i < p.ndim; ++i) s.shape[i] = p.shape[i];
  if (p.path == PlanPath::kRuns) {
    s.g = KindOf(p, p.g);
    s.x = KindOf(p, p.x);
  }
  s.tile_rows = p.tile_rows;
  s.tile_cols = p.tile_cols;
  s.transpose_result = p.path == PlanPath::kRuns && p.transpose_result;
  const actgrad::rt::OperandView* ops[3] = {&p.g, &p.x, &p.out};
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i < p.ndim; ++i) s.strides[k][i] = ops[k]->strides[i];
  s.inputs_in_order = p.inputs_in_order;
  s.threads = p.kernel.split.threads;
  s.variant = p.kernel.variant ? p.kernel.variant->name : "(none)";
  return s;
}

struct Expect {
  PlanPath path;
  In g = In::kAny, x = In::kAny;  // checked on kRuns only
};
// kRuns when the plan's inner dim (after coalescing) holds at least
// kMinRunBytes of t, else kBuffered.
PlanPath RunsIf(DType t, int64_t inner) {
  return uint64_t(inner) * Esize(t) >= actgrad::rt::kMinRunBytes ? PlanPath::kRuns : PlanPath::kBuffered;
}
Expect Want(DType t, int64_t inner, In g = In::kAny, In x = In::kAny) { return {RunsIf(t, inner), g, x}; }

// The bits of a decoded value (NaN payloads included).
uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}

// Both phases as RunOp, the plan read between them; then the path, the
// values (against the reference from g_ref / x_ref when given: the inputs
// before an in-place call; or, with `exact`, bit for bit against these
// values in out's row-major order) and the bytes outside the output view.
::testing::AssertionResult RunPath(const OpSpec& s, const Tensor& g, const Tensor& x, Tensor& out, const Expect& want,
                                   Seen* seen_out = nullptr, const Tensor* g_ref = nullptr,
                                   const Tensor* x_ref = nullptr, const std::vector<double>* exact = nullptr) {
  const auto snap = out.Snapshot();
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ScalarPtr holder;
  const aclnnStatus st1 = GetWorkspace(s, g, x, out, &ws, &ex, &holder);
  if (st1 != ACLNN_SUCCESS)
    return ::testing::AssertionFailure() << SpecName(s) << ": phase one " << st1 << " '" << ErrMsg() << "'";
  const Seen seen = Observe(ex->plan);
  if (seen_out) *seen_out = seen;
  void* w = nullptr;
  if (ws > 0 && aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    aclDestroyAclOpExecutor(ex);
    return ::testing::AssertionFailure() << "aclrtMalloc of " << ws << " bytes";
  }
  const aclnnStatus st2 = Execute(s, w, ws, ex, AclEnv::stream());
  const aclError sync = aclrtSynchronizeStream(AclEnv::stream());
  if (w) aclrtFree(w);
  if (st2 != ACLNN_SUCCESS || sync != ACL_SUCCESS)
    return ::testing::AssertionFailure() << SpecName(s) << ": phase two " << st2 << " sync " << sync << " '"
                                         << ErrMsg() << "'";
  const bool runs = seen.path == PlanPath::kRuns;
  if (seen.path != want.path || (runs && want.g != In::kAny && seen.g != want.g) ||
      (runs && want.x != In::kAny && seen.x != want.x))
    return ::testing::AssertionFailure() << SpecName(s) << ": planned " << seen.Describe() << ", expected "
                                         << PathName(want.path) << " g " << InName(want.g) << " x "
                                         << InName(want.x);
  if (exact) {
    const std::vector<double> got = out.Values();
    int64_t differ = 0, first = -1;
    for (size_t i = 0; i < got.size(); ++i) {
      if (Bits(got[i]) == Bits((*exact)[i])) continue;
      if (first < 0) first = int64_t(i);
      ++differ;
    }
    if (differ)
      return ::testing::AssertionFailure() << SpecName(s) << " (" << seen.Describe() << "): " << differ
                                           << " element(s) differ from the contiguous call; first at " << first
                                           << ": " << got[size_t(first)] << " vs " << (*exact)[size_t(first)];
  }
  const auto p = exact ? ::testing::AssertionSuccess() : Passes(Check(s, g_ref ? *g_ref : g, x_ref ? *x_ref : x, out));
  if (!p) return ::testing::AssertionFailure() << SpecName(s) << " (" << seen.Describe() << "): " << p.message();
  const auto only = out.OnlyViewChanged(snap);
  if (!only) return ::testing::AssertionFailure() << SpecName(s) << " (" << seen.Describe() << "): " << only.message();
  return ::testing::AssertionSuccess();
}

// In place: out = the given alias of g or x; checked against copies taken
// before the call.
::testing::AssertionResult RunInPlace(const OpSpec& s, const Tensor& g, const Tensor& x, Tensor& out,
                                      const Expect& want, Seen* seen = nullptr) {
  const Tensor g_ref = g.Clone(), x_ref = x.Clone();
  return RunPath(s, g, x, out, want, seen, &g_ref, &x_ref);
}

// The ops whose API broadcasts (GELU, Softshrink), every float dtype.
std::vector<OpType> BcastOpTypes() {
  std::vector<OpType> v;
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    v.push_back({"gelu_" + Name(t), Spec(Op::kGeluBwd), t});
    v.push_back({"gelu_tanh_" + Name(t), GeluTanh(), t});
    v.push_back({"softshrink_" + Name(t), Softshrink(0.5f), t});
  }
  return v;
}

template <typename Fn>
void ForAll(const std::vector<OpType>& params, Fn body) {
  for (const OpType& p : params) {
    SCOPED_TRACE(p.name);
    body(p);
  }
}

uint64_t Seed(const std::string& s, int64_t k) { return std::hash<std::string>{}(s) ^ uint64_t(k * 7919); }

// ------------------------------------------------------------- kFlat

void FlatOffsetsAndReversed(const OpType& p) {
  const OpSpec& s = p.spec;
  for (int64_t n : {33, 1000, 4099}) {
    // Contiguous at three different offsets.
    Tensor g = Roomy(p.t, {n}, 1), x = Roomy(p.t, {n}, 6), o = Roomy(p.t, {n}, 3);
    FillInputs(s, g, x, Seed(p.name, n));
    EXPECT_TRUE(RunPath(s, g, x, o, {PlanPath::kFlat})) << "n=" << n;
    // Every operand reversed in both dims: the flip makes all three contiguous.
    const int64_t r = 3;
    Tensor g2 = Strided(p.t, {r, n}, {-n, -1}), x2 = Strided(p.t, {r, n}, {-n, -1}, 9);
    Tensor o2 = Strided(p.t, {r, n}, {-n, -1}, 2);
    FillInputs(s, g2, x2, Seed(p.name, n + 1));
    EXPECT_TRUE(RunPath(s, g2, x2, o2, {PlanPath::kFlat})) << "reversed, n=" << n;
  }
}

// ------------------------------------------------------------- inner runs

const int64_t kInner[] = {33, 64, 70, 100, 129, 1000};

void InnerRunSwapped(const OpType& p) {
  const OpSpec& s = p.spec;
  for (int64_t c : kInner) {
    const int64_t b = c >= 1000 ? 2 : 4;
    const Dims d = {b, 4, 4, c};
    SCOPED_TRACE("c=" + std::to_string(c));
    {  // swapped inputs, out contiguous
      Tensor g = Swapped4D(p.t, b, c), x = Swapped4D(p.t, b, c, 11), o = Roomy(p.t, d);
      FillInputs(s, g, x, Seed(p.name, c));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kPlain, In::kPlain)));
    }
    {  // out itself the swapped view; x contiguous, g swapped
      Tensor g = Swapped4D(p.t, b, c, 2), x = Roomy(p.t, d), o = Swapped4D(p.t, b, c, 7);
      FillInputs(s, g, x, Seed(p.name, c + 1));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kPlain, In::kPlain)));
    }
    {  // the same 4-d view with the swap on dims 0 and 2 instead, out of another storage order
      Tensor g = Strided(p.t, d, {4 * c, 4 * b * c, 16 * c, 1}), x = Swapped4D(p.t, b, c);
      Tensor o = Strided(p.t, d, {4 * c, c, 4 * b * c, 1}, 13);
      FillInputs(s, g, x, Seed(p.name, c + 2));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kPlain, In::kPlain)));
    }
  }
}

// Strides that step down along the plan's dims (zeros skipped): the walk
// visits that operand in its memory order.
bool Descending(const int64_t* st, int nd) {
  for (int i = 0, last = -1; i < nd; ++i) {
    if (st[i] == 0) continue;
    if (last >= 0 && st[last] <= st[i]) return false;
    last = i;
  }
  return true;
}

// The walk of an inner-run view follows the inputs' memory order where they
// agree (two streams read in order beat one written in order from beyond
// the cache: plan.cc, OrderOuterDimsByInputs), with out written in runs out
// of order; where the inputs disagree g decides and the plan says the
// inputs are not in order (the kernels then prefetch runs from DRAM).
void WalkFollowsInputs(const OpType& p) {
  const OpSpec& s = p.spec;
  const int64_t b = 3, c = 64;
  const Dims d = {b, 4, 4, c};
  struct Case {
    const char* name;
    Tensor g, x, o;
    bool in_order;
  };
  Case cases[] = {
      {"swapped inputs, out contiguous", Swapped4D(p.t, b, c), Swapped4D(p.t, b, c, 11), Roomy(p.t, d), true},
      {"contiguous inputs, out swapped", Roomy(p.t, d), Roomy(p.t, d, 6), Swapped4D(p.t, b, c, 7), true},
      {"g swapped, x and out contiguous", Swapped4D(p.t, b, c), Roomy(p.t, d), Roomy(p.t, d, 4), false},
  };
  for (Case& k : cases) {
    SCOPED_TRACE(k.name);
    Seen seen;
    FillInputs(s, k.g, k.x, Seed(p.name, 77));
    EXPECT_TRUE(RunPath(s, k.g, k.x, k.o, Want(p.t, c, In::kPlain, In::kPlain), &seen));
    EXPECT_EQ(seen.inputs_in_order, k.in_order) << seen.Describe();
    EXPECT_TRUE(Descending(seen.strides[0], seen.ndim)) << seen.Describe();  // g leads
    EXPECT_FALSE(Descending(seen.strides[k.in_order ? 2 : 1], seen.ndim)) << seen.Describe();  // the other order
  }
}

void InnerRunSlices(const OpType& p) {
  const OpSpec& s = p.spec;
  for (int64_t c : kInner) {
    const int64_t r = c >= 1000 ? 9 : 37;
    SCOPED_TRACE("c=" + std::to_string(c));
    {  // three slices of wider storages at different offsets
      Tensor g = Slice2D(p.t, r, c, c + 5, 2, 3), x = Slice2D(p.t, r, c, c + 64, 1, 7);
      Tensor o = Slice2D(p.t, r, c, c + 1, 3, 1);
      FillInputs(s, g, x, Seed(p.name, c));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kPlain, In::kPlain)));
    }
    {  // out contiguous (room around it), inputs slices
      Tensor g = Slice2D(p.t, r, c, c + 17, 0, 17), x = Slice2D(p.t, r, c, 2 * c, 5, c - 1);
      Tensor o = Roomy(p.t, {r, c});
      FillInputs(s, g, x, Seed(p.name, c + 1));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kPlain, In::kPlain)));
    }
    {  // 3-d: [3, 5, c] from [.., 7, c + 9] storages, sliced in two dims
      const int64_t w = c + 9;
      Tensor g = Strided(p.t, {3, 5, c}, {7 * w, w, 1}, 2 * w + 4), x = Roomy(p.t, {3, 5, c});
      Tensor o = Strided(p.t, {3, 5, c}, {7 * w, w, 1}, w + 1);
      FillInputs(s, g, x, Seed(p.name, c + 2));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kPlain, In::kPlain)));
    }
  }
}

// 8-d views whose outer dims are permuted and stepped, size-1 dims with any
// stride: the walk carries a tile's rows across many dims.
void InnerRunEightDims(const OpType& p) {
  const OpSpec& s = p.spec;
  for (int64_t c : {33, 129}) {
    SCOPED_TRACE("c=" + std::to_string(c));
    const Dims d = {2, 1, 3, 2, 1, 2, 3, c};
    // g: outer dims stored in reverse order (storage [3, 2, 1, 2, 3, 1, 2, c]).
    Tensor g = PermutedView(p.t, d, {6, 5, 4, 3, 2, 1, 0, 7});
    // x: every outer dim stepped by 2 rows' worth, the size-1 dims with odd strides.
    Dims xs = ContiguousStrides(d);
    for (size_t i = 0; i + 1 < d.size(); ++i) xs[i] *= 2;
    xs[1] = 12345;
    xs[4] = -7;
    Tensor x = Strided(p.t, d, xs);
    Tensor o = Roomy(p.t, d);
    FillInputs(s, g, x, Seed(p.name, c));
    EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kPlain, In::kPlain)));
    // out the permuted one, g contiguous with room
    Tensor g2 = Roomy(p.t, d), o2 = PermutedView(p.t, d, {2, 0, 6, 3, 5, 1, 4, 7});
    FillInputs(s, g2, x, Seed(p.name, c + 1));
    EXPECT_TRUE(RunPath(s, g2, x, o2, Want(p.t, c, In::kPlain, In::kPlain)));
  }
}

// ------------------------------------------------------------- broadcast

// GELU and Softshrink broadcast through the API: [rows, 1] against [rows, cols].
void RowBroadcastApi(const OpType& p) {
  const OpSpec& s = p.spec;
  for (int64_t c : {33, 64, 100, 129, 1000}) {
    const int64_t r = c >= 1000 ? 7 : 41;
    SCOPED_TRACE("c=" + std::to_string(c));
    {  // self [rows, 1] (x a splat per run)
      Tensor g(p.t, {r, c}), x(p.t, {r, 1}), o = Roomy(p.t, {r, c});
      FillInputs(s, g, x, Seed(p.name, c));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kPlain, In::kSplat)));
    }
    {  // grad [rows, 1] (g a splat per run)
      Tensor g(p.t, {r, 1}), x(p.t, {r, c}), o = Roomy(p.t, {r, c});
      FillInputs(s, g, x, Seed(p.name, c + 1));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kSplat, In::kPlain)));
    }
    {  // [rows, 1] with a row stride of 3 at an offset, g a slice, out a slice
      Tensor g = Slice2D(p.t, r, c, c + 3, 1, 2), x = Strided(p.t, {r, 1}, {3, 1}, 4);
      Tensor o = Slice2D(p.t, r, c, c + 8, 2, 5);
      FillInputs(s, g, x, Seed(p.name, c + 2));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kPlain, In::kSplat)));
    }
    {  // [rows, 1] reversed (stride -1), out an inner-run view
      Tensor g = Strided(p.t, {r, 1}, {-1, 1}), x = Roomy(p.t, {r, c});
      Tensor o = Slice2D(p.t, r, c, c + 2, 1, 1);
      FillInputs(s, g, x, Seed(p.name, c + 3));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kSplat, In::kPlain)));
    }
    {  // a scalar [1] against [rows, cols]: one run of rows * cols, the splat across column tiles
      Tensor g(p.t, {r, c}), x(p.t, {1}), o = Roomy(p.t, {r, c});
      FillInputs(s, g, x, Seed(p.name, c + 4));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, r * c, In::kPlain, In::kSplat)));
      Tensor g0(p.t, Dims{}), x0(p.t, {r, c}), o0 = Roomy(p.t, {r, c});
      FillInputs(s, g0, x0, Seed(p.name, c + 5));
      EXPECT_TRUE(RunPath(s, g0, x0, o0, Want(p.t, r * c, In::kSplat, In::kPlain)));
    }
    {  // a whole dim broadcast: g [3, 1, c] against x [3, 5, c] (outer stride 0, runs in place)
      Tensor g(p.t, {3, 1, c}), x = Strided(p.t, {3, 5, c}, {5 * (c + 2), c + 2, 1}), o = Roomy(p.t, {3, 5, c});
      FillInputs(s, g, x, Seed(p.name, c + 6));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kPlain, In::kPlain)));
      Tensor g2 = Swapped4D(p.t, 2, c), x2(p.t, {4, 1, c}), o2 = Roomy(p.t, {2, 4, 4, c});
      FillInputs(s, g2, x2, Seed(p.name, c + 7));
      EXPECT_TRUE(RunPath(s, g2, x2, o2, Want(p.t, c, In::kPlain, In::kPlain)));
    }
    {  // transposed g with a splat x: gathered and splat in one tile
      Tensor g = Transposed(p.t, r, c), x(p.t, {r, 1}), o = Roomy(p.t, {r, c});
      FillInputs(s, g, x, Seed(p.name, c + 8));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kGathered, In::kSplat)));
    }
  }
}

// Every op: explicitly expanded (stride 0) inputs of the output's shape.
void ExpandedStrideZero(const OpType& p) {
  const OpSpec& s = p.spec;
  for (int64_t c : {33, 100, 129, 1000}) {
    const int64_t r = c >= 1000 ? 7 : 37;
    const Dims d = {r, c};
    SCOPED_TRACE("c=" + std::to_string(c));
    {  // g's column repeated: a splat per run
      Tensor g = ExpandedView(p.t, d, {false, true}), x = Slice2D(p.t, r, c, c + 4, 1, 1), o = Roomy(p.t, d);
      FillInputs(s, g, x, Seed(p.name, c));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kSplat, In::kPlain)));
    }
    {  // x's
      Tensor g(p.t, d), x = ExpandedView(p.t, d, {false, true}), o = Slice2D(p.t, r, c, c + 6, 2, 3);
      FillInputs(s, g, x, Seed(p.name, c + 1));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kPlain, In::kSplat)));
    }
    {  // both
      Tensor g = ExpandedView(p.t, d, {false, true}), x = ExpandedView(p.t, d, {false, true}), o = Roomy(p.t, d);
      FillInputs(s, g, x, Seed(p.name, c + 2));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kSplat, In::kSplat)));
    }
    {  // a row repeated (outer stride 0): runs in place
      Tensor g = ExpandedView(p.t, d, {true, false}), x = Strided(p.t, d, {c + 1, 1}), o = Roomy(p.t, d);
      FillInputs(s, g, x, Seed(p.name, c + 3));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kPlain, In::kPlain)));
    }
    {  // 3-d, expanded in the middle and inner dims of g, x an inner-run view
      const Dims d3 = {3, 4, c};
      Tensor g = ExpandedView(p.t, d3, {false, true, true}), x = Strided(p.t, d3, {4 * c + 9, c + 2, 1});
      Tensor o = Roomy(p.t, d3);
      FillInputs(s, g, x, Seed(p.name, c + 4));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kSplat, In::kPlain)));
    }
  }
}

// ------------------------------------------------------------- transposes

struct Tile {
  bool partial_rows = false, partial_cols = false;
  void Add(const Seen& s) {
    if (s.path != PlanPath::kRuns) return;
    partial_rows |= s.PartialRows();
    partial_cols |= s.PartialCols();
  }
};

void TransposedViews(const OpType& p) {
  const OpSpec& s = p.spec;
  Tile tiles;
  const std::pair<int64_t, int64_t> shapes[] = {{70, 200}, {129, 65}, {65, 129}, {200, 33}, {5, 1000}, {1025, 72}};
  for (const auto& [a, b] : shapes) {
    SCOPED_TRACE("a=" + std::to_string(a) + " b=" + std::to_string(b));
    Seen seen;
    {  // both inputs transposed, out contiguous
      Tensor g = Transposed(p.t, a, b), x = Transposed(p.t, a, b, 9), o = Roomy(p.t, {a, b});
      FillInputs(s, g, x, Seed(p.name, a * b));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, b, In::kGathered, In::kGathered), &seen));
      tiles.Add(seen);
    }
    {  // mixed: g transposed, x contiguous; out a slice
      Tensor g = Transposed(p.t, a, b), x = Roomy(p.t, {a, b}), o = Slice2D(p.t, a, b, b + 3, 1, 2);
      FillInputs(s, g, x, Seed(p.name, a * b + 1));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, b, In::kGathered, In::kPlain), &seen));
      tiles.Add(seen);
    }
    {  // transposed output, contiguous inputs: the plan's inner dim is a
      Tensor g = Roomy(p.t, {a, b}), x(p.t, {a, b}), o = Transposed(p.t, a, b, 4);
      FillInputs(s, g, x, Seed(p.name, a * b + 2));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, a, In::kGathered, In::kGathered), &seen));
      tiles.Add(seen);
    }
    {  // transposed output, x transposed as well (x plain, g gathered)
      Tensor g(p.t, {a, b}), x = Transposed(p.t, a, b), o = Transposed(p.t, a, b, 2);
      FillInputs(s, g, x, Seed(p.name, a * b + 3));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, a, In::kGathered, In::kPlain), &seen));
      tiles.Add(seen);
    }
    {  // a stepped input (inner stride 2) and a transposed one
      Tensor g = Strided(p.t, {a, b}, {2 * b + 1, 2}), x = Transposed(p.t, a, b), o = Roomy(p.t, {a, b});
      FillInputs(s, g, x, Seed(p.name, a * b + 4));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, b, In::kGathered, In::kGathered), &seen));
      tiles.Add(seen);
    }
  }
  {  // batched: [3, a, b] with the last two dims transposed (tiles stay within a batch)
    const int64_t a = 70, b = 100;
    Tensor g = Strided(p.t, {3, a, b}, {a * b, 1, a}), x = Roomy(p.t, {3, a, b});
    Tensor o = Strided(p.t, {3, a, b}, {a * b + 5, b, 1});
    FillInputs(s, g, x, Seed(p.name, 77));
    Seen seen;
    EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, b, In::kGathered, In::kPlain), &seen));
    tiles.Add(seen);
    // batch dim innermost in storage: [a, b, 3] storage viewed as [3, a, b]
    Tensor g2 = Strided(p.t, {3, a, b}, {1, 3 * b, 3}), x2 = Strided(p.t, {3, a, b}, {a * b, 1, a});
    Tensor o2 = Roomy(p.t, {3, a, b});
    FillInputs(s, g2, x2, Seed(p.name, 78));
    EXPECT_TRUE(RunPath(s, g2, x2, o2, Want(p.t, b, In::kGathered, In::kGathered), &seen));
    tiles.Add(seen);
  }
  // The shapes are not multiples of the tile (plan.h kGatheredTileRows x kGatheredTileOutBytes or the table's; 1025 rows
  // exceed kMaxTileRows and no power-of-two tile divides them): some tiles end early.
  EXPECT_TRUE(tiles.partial_rows);
  EXPECT_TRUE(tiles.partial_cols);
}

// ------------------------------------------------------------- result transposed

// Split::transpose_result forced on the default variant: where g and x are
// both transposed (stride 1 along out's rows) each tile is computed in the
// inputs' order and its result transposed into out; any other view keeps the
// inputs' copies. Tiles of whole input rows (1024 rows: those of a 4 KB row
// view too), partial ones, one row or one column; out contiguous or a slice;
// batches; offsets.
void TransposedResult(const OpType& p) {
  const OpSpec& s = p.spec;
  const int64_t es = int64_t(Esize(p.t));
  struct Forced {
    int threads;
    int64_t tr, tc;
  };
  for (const Forced& f : {Forced{2, 1024, 64}, Forced{1, 13, 7}, Forced{3, 1, 100}, Forced{2, 64, 1}}) {
    SCOPED_TRACE("threads " + std::to_string(f.threads) + " tile " + std::to_string(f.tr) + "x" + std::to_string(f.tc));
    actgrad::KernelChoice forced;
    forced.variant = actgrad::DefaultVariant(s.op, p.t, s.p.gelu_approx);
    ASSERT_NE(forced.variant, nullptr);
    forced.split.threads = f.threads;
    forced.split.tile_rows = f.tr;
    forced.split.tile_cols = f.tc;
    forced.split.transpose_result = true;
    actgrad::ScopedKernelOverride override_kernel(forced);
    // a x b with a * es a multiple of 4 KB: out's rows 4 KB apart
    const int64_t a4k = 4096 / es;
    const std::pair<int64_t, int64_t> shapes[] = {{70, 200}, {129, 65}, {5, 1000}, {a4k, 40}, {1025, 33}};
    for (const auto& [a, b] : shapes) {
      SCOPED_TRACE("a=" + std::to_string(a) + " b=" + std::to_string(b));
      Seen seen;
      {  // both transposed, out contiguous
        Tensor g = Transposed(p.t, a, b), x = Transposed(p.t, a, b, 9), o = Roomy(p.t, {a, b});
        FillInputs(s, g, x, Seed(p.name, a * b + 10));
        EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, b, In::kGathered, In::kGathered), &seen));
        EXPECT_EQ(seen.transpose_result, seen.path == PlanPath::kRuns) << seen.Describe();
      }
      {  // both transposed with row padding in their storage, out a slice
        Tensor g = Strided(p.t, {a, b}, {1, a + 3}, 2), x = Transposed(p.t, a, b);
        Tensor o = Slice2D(p.t, a, b, b + 5, 1, 3);
        FillInputs(s, g, x, Seed(p.name, a * b + 11));
        EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, b, In::kGathered, In::kGathered), &seen));
        EXPECT_EQ(seen.transpose_result, seen.path == PlanPath::kRuns) << seen.Describe();
      }
      {  // x reversed along out's rows: not transposed the same way, so the inputs are copied
        Tensor g = Transposed(p.t, a, b), x = Strided(p.t, {a, b}, {-1, a}, a - 1 + 4), o = Roomy(p.t, {a, b});
        FillInputs(s, g, x, Seed(p.name, a * b + 12));
        EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, b), &seen));
        EXPECT_FALSE(seen.transpose_result) << seen.Describe();
      }
      {  // x contiguous: copied as before
        Tensor g = Transposed(p.t, a, b), x = Roomy(p.t, {a, b}), o = Roomy(p.t, {a, b});
        FillInputs(s, g, x, Seed(p.name, a * b + 13));
        EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, b, In::kGathered, In::kPlain), &seen));
        EXPECT_FALSE(seen.transpose_result) << seen.Describe();
      }
    }
    {  // batched [3, a, b], both inputs transposed per batch: tiles stay within a batch
      const int64_t a = 70, b = 100;
      Tensor g = Strided(p.t, {3, a, b}, {a * b, 1, a}), x = Strided(p.t, {3, a, b}, {a * b + 9, 1, a}, 3);
      Tensor o = Strided(p.t, {3, a, b}, {a * b + 5, b, 1});
      FillInputs(s, g, x, Seed(p.name, 79));
      Seen seen;
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, b, In::kGathered, In::kGathered), &seen));
      EXPECT_TRUE(seen.transpose_result) << seen.Describe();
    }
  }
}

// ------------------------------------------------------------- negative strides

void NegativeStrides(const OpType& p) {
  const OpSpec& s = p.spec;
  for (int64_t c : {33, 100, 129}) {
    const int64_t r = 29;
    const Dims d = {r, c};
    SCOPED_TRACE("c=" + std::to_string(c));
    {  // reversed runs in g (inner stride -1): gathered
      Tensor g = Strided(p.t, d, {c, -1}), x = Roomy(p.t, d), o = Roomy(p.t, d);
      FillInputs(s, g, x, Seed(p.name, c));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kGathered, In::kPlain)));
    }
    {  // reversed rows (runs in place), and x reversed both ways
      Tensor g = Strided(p.t, d, {-c, 1}), x = Strided(p.t, d, {-(c + 2), -1}), o = Roomy(p.t, d);
      FillInputs(s, g, x, Seed(p.name, c + 1));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kPlain, In::kGathered)));
    }
    {  // out with a negative inner stride, inputs contiguous: flipped, both gathered
      Tensor g(p.t, d), x = Roomy(p.t, d), o = Strided(p.t, d, {c, -1});
      FillInputs(s, g, x, Seed(p.name, c + 2));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kGathered, In::kGathered)));
    }
    {  // out and g reversed runs (both flip to +1), x contiguous (flips to -1)
      Tensor g = Strided(p.t, d, {c + 4, -1}), x(p.t, d), o = Strided(p.t, d, {c + 1, -1});
      FillInputs(s, g, x, Seed(p.name, c + 3));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kPlain, In::kGathered)));
    }
    {  // out with reversed rows, inputs inner-run slices
      Tensor g = Slice2D(p.t, r, c, c + 2, 1, 1), x(p.t, d), o = Strided(p.t, d, {-(c + 3), 1});
      FillInputs(s, g, x, Seed(p.name, c + 4));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kPlain, In::kPlain)));
    }
    {  // 4-d: swapped dims and a reversed one
      Tensor g = Strided(p.t, {2, 4, 4, c}, {16 * c, c, -4 * c, 1}), x = Swapped4D(p.t, 2, c);
      Tensor o = Strided(p.t, {2, 4, 4, c}, {-16 * c, 4 * c, c, 1});
      FillInputs(s, g, x, Seed(p.name, c + 5));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kPlain, In::kPlain)));
    }
  }
  {  // 1-d: a reversed input of 1000 (one row, gathered), a reversed output
    Tensor g = Strided(p.t, {1000}, {-1}), x = Roomy(p.t, {1000}), o = Roomy(p.t, {1000});
    FillInputs(s, g, x, Seed(p.name, 1));
    EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, 1000, In::kGathered, In::kPlain)));
    Tensor g2 = Roomy(p.t, {1000}), x2 = Strided(p.t, {1000}, {2}), o2 = Strided(p.t, {1000}, {-1});
    FillInputs(s, g2, x2, Seed(p.name, 2));
    EXPECT_TRUE(RunPath(s, g2, x2, o2, Want(p.t, 1000, In::kGathered, In::kGathered)));
  }
}

// ------------------------------------------------------------- short runs

void ShortRuns(const OpType& p) {
  const OpSpec& s = p.spec;
  for (int64_t c : {3, 5, 15, 16, 31, 32}) {
    const int64_t r = 5000 / c + 7;  // more than one buffer of kBufferElems
    const Dims d = {r, c};
    SCOPED_TRACE("c=" + std::to_string(c));
    {  // slices
      Tensor g = Slice2D(p.t, r, c, c + 2, 1, 1), x = Slice2D(p.t, r, c, c + 5, 0, 3);
      Tensor o = Slice2D(p.t, r, c, c + 1, 2, 1);
      FillInputs(s, g, x, Seed(p.name, c));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kPlain, In::kPlain)));
    }
    {  // 4-d swapped, out contiguous
      const int64_t b = r / 16 + 1;
      Tensor g = Swapped4D(p.t, b, c), x = Swapped4D(p.t, b, c, 3), o = Roomy(p.t, {b, 4, 4, c});
      FillInputs(s, g, x, Seed(p.name, c + 1));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kPlain, In::kPlain)));
    }
    {  // transposed input, stride-0 input (column repeated)
      Tensor g = Transposed(p.t, r, c), x = ExpandedView(p.t, d, {false, true}), o = Roomy(p.t, d);
      FillInputs(s, g, x, Seed(p.name, c + 2));
      EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, c, In::kGathered, In::kSplat)));
    }
    {  // out reversed and stepped (kBuffered whatever the run length: out's inner stride is 2)
      Tensor g(p.t, d), x = Roomy(p.t, d), o = Strided(p.t, d, {-(2 * c + 1), 2});
      FillInputs(s, g, x, Seed(p.name, c + 3));
      EXPECT_TRUE(RunPath(s, g, x, o, {PlanPath::kBuffered}));
    }
  }
}

// GELU's dtype promotion (inputs of another dtype than out): kBuffered
// whatever the run length, through views.
TEST(ViewPaths, GeluPromotionTakesBlocks) {
  for (const OpSpec& s : {Spec(Op::kGeluBwd), GeluTanh()}) {
    SCOPED_TRACE(SpecName(s));
    Tensor g = Transposed(DType::kF16, 70, 129), x = Slice2D(DType::kBF16, 70, 129, 131, 1, 1);
    Tensor o2 = Slice2D(DType::kF32, 70, 129, 140, 2, 3);
    FillInputs(s, g, x, 1);
    EXPECT_TRUE(RunPath(s, g, x, o2, {PlanPath::kBuffered}));
    Tensor g3 = Swapped4D(DType::kF32, 2, 100), x3 = Swapped4D(DType::kF16, 2, 100), o3 = Roomy(DType::kF32, {2, 4, 4, 100});
    FillInputs(s, g3, x3, 2);
    EXPECT_TRUE(RunPath(s, g3, x3, o3, {PlanPath::kBuffered}));
    Tensor g4(DType::kBF16, {37, 1}), x4 = Roomy(DType::kF32, {37, 100}), o4 = Roomy(DType::kF32, {37, 100});
    FillInputs(s, g4, x4, 3);
    EXPECT_TRUE(RunPath(s, g4, x4, o4, {PlanPath::kBuffered}));
  }
}

// ------------------------------------------------------------- in place

void InPlace(const OpType& p) {
  const OpSpec& s = p.spec;
  for (int64_t c : {70, 129}) {
    SCOPED_TRACE("c=" + std::to_string(c));
    {  // out aliases g exactly on an inner-run view
      Tensor g = Swapped4D(p.t, 3, c), x = Roomy(p.t, {3, 4, 4, c});
      FillInputs(s, g, x, Seed(p.name, c));
      Tensor o = g.Alias();
      EXPECT_TRUE(RunInPlace(s, g, x, o, Want(p.t, c, In::kPlain, In::kPlain)));
    }
    {  // out aliases g on a transposed view: x is gathered against it
      const int64_t a = 67;
      Tensor g = Transposed(p.t, a, c), x = Roomy(p.t, {a, c});
      FillInputs(s, g, x, Seed(p.name, c + 1));
      Tensor o = g.Alias();
      EXPECT_TRUE(RunInPlace(s, g, x, o, Want(p.t, a, In::kPlain, In::kGathered)));
    }
    {  // out aliases x on an inner-run slice, g transposed
      const int64_t a = 45;
      Tensor g = Transposed(p.t, a, c), x = Slice2D(p.t, a, c, c + 3, 1, 2);
      FillInputs(s, g, x, Seed(p.name, c + 2));
      Tensor o = x.Alias();
      EXPECT_TRUE(RunInPlace(s, g, x, o, Want(p.t, c, In::kGathered, In::kPlain)));
    }
    {  // out aliases x on a transposed view, g contiguous
      const int64_t a = 80;
      Tensor g(p.t, {a, c}), x = Transposed(p.t, a, c);
      FillInputs(s, g, x, Seed(p.name, c + 3));
      Tensor o = x.Alias();
      EXPECT_TRUE(RunInPlace(s, g, x, o, Want(p.t, a, In::kGathered, In::kPlain)));
    }
    {  // out aliases g on a reversed view (flipped with it), x gathered
      Tensor g = Strided(p.t, {21, c}, {c + 2, -1}), x = Roomy(p.t, {21, c});
      FillInputs(s, g, x, Seed(p.name, c + 4));
      Tensor o = g.Alias();
      EXPECT_TRUE(RunInPlace(s, g, x, o, Want(p.t, c, In::kPlain, In::kGathered)));
    }
    {  // out aliases x with g a splat (column repeated)
      Tensor g = ExpandedView(p.t, {23, c}, {false, true}), x = Slice2D(p.t, 23, c, c + 1, 1, 0);
      FillInputs(s, g, x, Seed(p.name, c + 5));
      Tensor o = x.Alias();
      EXPECT_TRUE(RunInPlace(s, g, x, o, Want(p.t, c, In::kSplat, In::kPlain)));
    }
  }
  {  // short runs in place (kBuffered)
    Tensor g = Slice2D(p.t, 3000, 5, 7, 1, 1), x = Transposed(p.t, 3000, 5);
    FillInputs(s, g, x, Seed(p.name, 5));
    Tensor o = g.Alias();
    EXPECT_TRUE(RunInPlace(s, g, x, o, {PlanPath::kBuffered}));
  }
}

void InPlaceBroadcast(const OpType& p) {
  const OpSpec& s = p.spec;
  Tensor g = Slice2D(p.t, 33, 129, 140, 2, 3), x = Strided(p.t, {33, 1}, {2, 1});
  FillInputs(s, g, x, Seed(p.name, 1));
  Tensor o = g.Alias();
  EXPECT_TRUE(RunInPlace(s, g, x, o, Want(p.t, 129, In::kPlain, In::kSplat)));
  Tensor g2(p.t, {1, 100}), x2 = Transposed(p.t, 50, 100);
  FillInputs(s, g2, x2, Seed(p.name, 2));
  Tensor o2 = x2.Alias();  // out transposed: the plan's inner dim is 50, along which g [1, 100] is a splat
  EXPECT_TRUE(RunInPlace(s, g2, x2, o2, Want(p.t, 50, In::kSplat, In::kPlain)));
}

TEST(ViewPaths, FlatOffsetsAndReversed) { ForAll(OpTypes(), FlatOffsetsAndReversed); }
TEST(ViewPaths, InnerRunSwapped) { ForAll(OpTypes(), InnerRunSwapped); }
TEST(ViewPaths, InnerRunSlices) { ForAll(OpTypes(), InnerRunSlices); }
TEST(ViewPaths, WalkFollowsInputs) { ForAll(OpTypes(), WalkFollowsInputs); }
TEST(ViewPaths, InnerRunEightDims) { ForAll(OpTypes(), InnerRunEightDims); }
TEST(ViewPaths, RowBroadcastApi) { ForAll(BcastOpTypes(), RowBroadcastApi); }
TEST(ViewPaths, ExpandedStrideZero) { ForAll(OpTypes(), ExpandedStrideZero); }
TEST(ViewPaths, TransposedViews) { ForAll(OpTypes(), TransposedViews); }
TEST(ViewPaths, TransposedResult) { ForAll(OpTypes(), TransposedResult); }
TEST(ViewPaths, NegativeStrides) { ForAll(OpTypes(), NegativeStrides); }
TEST(ViewPaths, ShortRuns) { ForAll(OpTypes(), ShortRuns); }
TEST(ViewPaths, InPlace) { ForAll(OpTypes(), InPlace); }
TEST(ViewPaths, InPlaceBroadcast) { ForAll(BcastOpTypes(), InPlaceBroadcast); }

// A repeatable executor on views: phase one once, then launches with new
// input values each time (the plan keeps the views, not the values), the
// workspace 8 bytes past a 64-byte boundary (phase two assumes no more).
TEST(ViewPaths, RepeatableExecutorOnViews) {
  struct Case {
    std::string name;
    OpSpec spec;
    DType t;
    std::function<Tensor()> g, x, out;
    Expect want;
  };
  const std::vector<Case> cases = {
      {"gelu_f32 transposed g, splat x", Spec(Op::kGeluBwd), DType::kF32, [] { return Transposed(DType::kF32, 70, 129); },
       [] { return Tensor(DType::kF32, {70, 1}); }, [] { return Roomy(DType::kF32, {70, 129}); },
       {PlanPath::kRuns, In::kGathered, In::kSplat}},
      {"selu_bf16 swapped", Spec(Op::kSeluBwd), DType::kBF16, [] { return Swapped4D(DType::kBF16, 3, 100); },
       [] { return Roomy(DType::kBF16, {3, 4, 4, 100}); }, [] { return Swapped4D(DType::kBF16, 3, 100, 1); },
       {PlanPath::kRuns, In::kPlain, In::kPlain}},
      {"softshrink_f16 splat g, reversed x", Softshrink(0.5f), DType::kF16,
       [] { return ExpandedView(DType::kF16, {40, 100}, {false, true}); },
       [] { return Strided(DType::kF16, {40, 100}, {100, -1}); }, [] { return Roomy(DType::kF16, {40, 100}); },
       {PlanPath::kRuns, In::kSplat, In::kGathered}},
      {"logit_f32 short runs", Logit(0.25f), DType::kF32, [] { return Slice2D(DType::kF32, 3000, 5, 7, 1, 1); },
       [] { return Transposed(DType::kF32, 3000, 5); }, [] { return Roomy(DType::kF32, {3000, 5}); },
       {PlanPath::kBuffered}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor g = c.g(), x = c.x(), o = c.out();
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    ScalarPtr holder;
    ASSERT_EQ(GetWorkspace(c.spec, g, x, o, &ws, &ex, &holder), ACLNN_SUCCESS) << ErrMsg();
    const Seen seen = Observe(ex->plan);
    EXPECT_EQ(seen.path, c.want.path) << seen.Describe();
    if (seen.path == PlanPath::kRuns) {
      EXPECT_EQ(seen.g, c.want.g) << seen.Describe();
      EXPECT_EQ(seen.x, c.want.x) << seen.Describe();
    }
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS) << ErrMsg();
    std::vector<uint8_t> wbuf(ws + 128);
    uint8_t* w = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(wbuf.data()) + 63) / 64 * 64) + 8;
    for (int round = 0; round < 3; ++round) {
      FillInputs(c.spec, g, x, 100 + uint64_t(round));
      const auto snap = o.Snapshot();
      ASSERT_EQ(Execute(c.spec, ws ? w : nullptr, ws, ex, AclEnv::stream()), ACLNN_SUCCESS) << ErrMsg();
      ASSERT_EQ(aclrtSynchronizeStream(AclEnv::stream()), ACL_SUCCESS);
      EXPECT_TRUE(Passes(Check(c.spec, g, x, o))) << "round " << round;
      EXPECT_TRUE(o.OnlyViewChanged(snap)) << "round " << round;
    }
    EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
  }
}

// ------------------------------------------------------------- large (threaded)

// Threads the library may use here (the tests below expect the threaded path
// only where there is more than one).
int Available() { return std::max(1, omp_get_max_threads()); }

void ExpectThreaded(const Seen& seen) {
  ::testing::Test::RecordProperty("plan", seen.Describe());
  if (Available() >= 2) EXPECT_GE(seen.threads, 2) << seen.Describe();
}

TEST(ViewPathsLarge, RowBroadcast3x300000) {
  for (const OpType& p : {OpType{"gelu_f32", Spec(Op::kGeluBwd), DType::kF32},
                          OpType{"softshrink_bf16", Softshrink(0.5f), DType::kBF16}}) {
    SCOPED_TRACE(p.name);
    Tensor g(p.t, {3, 300000}), x(p.t, {3, 1}), o = Roomy(p.t, {3, 300000});
    FillInputs(p.spec, g, x, 1);
    Seen seen;
    EXPECT_TRUE(RunPath(p.spec, g, x, o, {PlanPath::kRuns, In::kPlain, In::kSplat}, &seen));
    ExpectThreaded(seen);
  }
  const OpType p{"gelu_tanh_f16", GeluTanh(), DType::kF16};
  Tensor g(p.t, {3, 1}), x(p.t, {3, 300000}), o = Roomy(p.t, {3, 300000});
  FillInputs(p.spec, g, x, 2);
  Seen seen;
  EXPECT_TRUE(RunPath(p.spec, g, x, o, {PlanPath::kRuns, In::kSplat, In::kPlain}, &seen));
  ExpectThreaded(seen);
}

TEST(ViewPathsLarge, Transposed2048x1500) {
  const OpType p{"hardswish_f32", Spec(Op::kHardswishBwd), DType::kF32};
  Tensor g = Transposed(p.t, 2048, 1500), x = Roomy(p.t, {2048, 1500}), o = Roomy(p.t, {2048, 1500});
  FillInputs(p.spec, g, x, 3);
  Seen seen;
  EXPECT_TRUE(RunPath(p.spec, g, x, o, {PlanPath::kRuns, In::kGathered, In::kPlain}, &seen));
  ExpectThreaded(seen);
}

// A transposed view beyond the last-level cache whose out is written in
// whole, aligned lines takes the table's choice with streaming stores (its
// StreamingTwin); an out not on line boundaries keeps the plain choice
// (tiling/dispatch.h StreamingOnWholeLines). The table is one entry naming
// the plain default; the view is sized past the last-level cache of the
// machine the dispatch poses as: this one with a 32 MiB last level (Zen 4's),
// so that the view stays small on a CPU with a larger one (480 MiB).
TEST(ViewPathsLarge, TransposedStreamsOnWholeLines) {
  const OpType p{"selu_f32", Spec(Op::kSeluBwd), DType::kF32};
  const actgrad::Variant* plain = actgrad::DefaultVariant(actgrad::Op::kSeluBwd, actgrad::DType::kF32);
  ASSERT_NE(plain, nullptr);
  const actgrad::Variant* nt = actgrad::StreamingTwin(*plain);
  ASSERT_NE(nt, nullptr) << plain->name;
  actgrad::MachineFacts small = actgrad::ThisMachineFacts();
  small.llc = uint64_t(32) << 20;
  const uint64_t llc = small.llc;
  const int64_t rows = 1024, cols = int64_t(llc / (12 * 1024) / 16 + 1) * 16;  // g, x, out: 12 bytes an element
  const int octave = std::bit_width(uint64_t(rows * cols)) - 1;
  const std::string path = ::testing::TempDir() + "actgrad_whole_lines_" + std::to_string(getpid()) + ".json";
  std::ofstream(path, std::ios::trunc)
      << R"({"schema": "actgrad-tiling-table", "version": 3, "machine_id": "test-machine", "backend": "cpu",)"
      << R"( "provenance": {"isa_family": "test"}, "entries": [{"op": "selu_bwd", "dtype": "f32",)"
      << R"( "layout": "transposed", "octave": )" << octave << R"(, "variant": ")" << plain->name
      << R"(", "chunk": 0, "threads": 1, "median_ns": 1.0, "spread_pct": 0.0}]})";
  setenv("ACTGRAD_TILING_TABLE", path.c_str(), 1);
  actgrad::PoseAsMachine(small);
  for (const int64_t front : {int64_t(16), int64_t(3)}) {  // out's first element on a line, then 12 bytes past one
    SCOPED_TRACE(front);
    Tensor g = Transposed(p.t, rows, cols), x = Transposed(p.t, rows, cols), o = Roomy(p.t, {rows, cols}, front);
    FillInputs(p.spec, g, x, 5);
    Seen seen;
    EXPECT_TRUE(RunPath(p.spec, g, x, o, {PlanPath::kRuns, In::kGathered, In::kGathered}, &seen));
    EXPECT_EQ(seen.variant, front == 16 ? nt->name : plain->name) << seen.Describe();
  }
  unsetenv("ACTGRAD_TILING_TABLE");
  actgrad::ReloadTilingTable();
  std::remove(path.c_str());
}

TEST(ViewPathsLarge, TransposedOutputBf16) {
  const OpType p{"selu_bf16", Spec(Op::kSeluBwd), DType::kBF16};
  Tensor g(p.t, {700, 1100}), x = Transposed(p.t, 700, 1100), o = Transposed(p.t, 700, 1100, 3);
  FillInputs(p.spec, g, x, 4);
  Seen seen;
  EXPECT_TRUE(RunPath(p.spec, g, x, o, {PlanPath::kRuns, In::kGathered, In::kPlain}, &seen));
  ExpectThreaded(seen);
}

TEST(ViewPathsLarge, InnerRunSwapped) {
  for (const OpType& p : {OpType{"selu_f32", Spec(Op::kSeluBwd), DType::kF32},
                          OpType{"logit_bf16", Logit(-1.0f), DType::kBF16}}) {
    SCOPED_TRACE(p.name);
    // 614400 elements, runs of 64; 601: an odd outer dim, so the row table's
    // block is 16 rows and every tile spans several (RowWalker::TakeAll).
    for (const int64_t b : {int64_t(600), int64_t(601)}) {
      SCOPED_TRACE(b);
      Tensor g = Swapped4D(p.t, b, 64), x = Swapped4D(p.t, b, 64), o = Roomy(p.t, {b, 4, 4, 64});
      FillInputs(p.spec, g, x, 5);
      Seen seen;
      EXPECT_TRUE(RunPath(p.spec, g, x, o, {PlanPath::kRuns, In::kPlain, In::kPlain}, &seen));
      ExpectThreaded(seen);
    }
  }
}

TEST(ViewPathsLarge, InPlaceTransposed) {
  const OpType p{"softshrink_f32", Softshrink(0.5f), DType::kF32};
  Tensor g = Transposed(p.t, 1000, 700), x(p.t, {1000, 700});
  FillInputs(p.spec, g, x, 6);
  Tensor o = g.Alias();
  Seen seen;
  EXPECT_TRUE(RunInPlace(p.spec, g, x, o, {PlanPath::kRuns, In::kPlain, In::kGathered}, &seen));
  ExpectThreaded(seen);
}

TEST(ViewPathsLarge, ShortRunsBlocks) {
  const OpType p{"gelu_f32", Spec(Op::kGeluBwd), DType::kF32};
  Tensor g = Slice2D(p.t, 100000, 5, 6, 0, 1), x = Roomy(p.t, {100000, 5}), o = Slice2D(p.t, 100000, 5, 7, 1, 2);
  FillInputs(p.spec, g, x, 7);
  Seen seen;
  EXPECT_TRUE(RunPath(p.spec, g, x, o, {PlanPath::kBuffered}, &seen));
  ExpectThreaded(seen);
}

// ------------------------------------------------------------- forced splits

// The views of the forced runs: every kRuns flavour and a kBuffered one, sizes
// small enough to run many splits.
void ViewsUnderSplit(const OpType& p, const actgrad::Split& split, const std::string& what) {
  const OpSpec& s = p.spec;
  SCOPED_TRACE(what);
  actgrad::KernelChoice forced;
  forced.variant = actgrad::DefaultVariant(s.op, p.t, s.p.gelu_approx);
  ASSERT_NE(forced.variant, nullptr);
  forced.split = split;
  actgrad::ScopedKernelOverride override_kernel(forced);
  Seen seen;
  {
    Tensor g = Swapped4D(p.t, 3, 129), x = Roomy(p.t, {3, 4, 4, 129}), o = Swapped4D(p.t, 3, 129, 2);
    FillInputs(s, g, x, 1);
    EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, 129, In::kPlain, In::kPlain), &seen)) << seen.Describe();
  }
  {
    Tensor g = Slice2D(p.t, 37, 100, 103, 1, 2), x = ExpandedView(p.t, {37, 100}, {false, true});
    Tensor o = Roomy(p.t, {37, 100});
    FillInputs(s, g, x, 2);
    EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, 100, In::kPlain, In::kSplat), &seen)) << seen.Describe();
  }
  {
    Tensor g = Transposed(p.t, 70, 130), x = Strided(p.t, {70, 130}, {-130, -1}), o = Roomy(p.t, {70, 130});
    FillInputs(s, g, x, 3);
    EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, 130, In::kGathered, In::kGathered), &seen)) << seen.Describe();
  }
  {
    Tensor g = Strided(p.t, {2, 40, 100}, {4000, 1, 40}), x = ExpandedView(p.t, {2, 40, 100}, {false, false, true});
    Tensor o = Roomy(p.t, {2, 40, 100});
    FillInputs(s, g, x, 4);
    EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, 100, In::kGathered, In::kSplat), &seen)) << seen.Describe();
  }
  {
    Tensor g(p.t, {129, 65}), x = Roomy(p.t, {129, 65}), o = Transposed(p.t, 129, 65);
    FillInputs(s, g, x, 5);
    EXPECT_TRUE(RunPath(s, g, x, o, Want(p.t, 129, In::kGathered, In::kGathered), &seen)) << seen.Describe();
  }
  {
    Tensor g = Slice2D(p.t, 1000, 5, 6, 1, 0), x = Transposed(p.t, 1000, 5), o = Slice2D(p.t, 1000, 5, 8, 0, 2);
    FillInputs(s, g, x, 6);
    EXPECT_TRUE(RunPath(s, g, x, o, {PlanPath::kBuffered}, &seen)) << seen.Describe();
  }
  {
    Tensor g = Transposed(p.t, 90, 129), x(p.t, {90, 129});
    FillInputs(s, g, x, 7);
    Tensor o = g.Alias();
    EXPECT_TRUE(RunInPlace(s, g, x, o, Want(p.t, 90, In::kPlain, In::kGathered), &seen)) << seen.Describe();
  }
}

std::vector<std::pair<std::string, actgrad::Split>> ForcedSplits() {
  auto mk = [](int threads, int64_t chunk, int64_t tr, int64_t tc) {
    actgrad::Split s;
    s.threads = threads;
    s.chunk = chunk;
    s.tile_rows = tr;
    s.tile_cols = tc;
    return s;
  };
  return {
      {"2 threads, defaults", mk(2, 0, 0, 0)},
      {"2 threads, chunk 50 (runs cut in column tiles), tile 5x7", mk(2, 50, 5, 7)},
      {"2 threads, chunk 1000 (tiles of several rows), tile 13x100", mk(2, 1000, 13, 100)},
      {"1 thread, chunk 7, tile 1x1000", mk(1, 7, 1, 1000)},
      {"2 threads, chunk 300, tile 1024x1", mk(2, 300, 1024, 1)},
      {"3 threads, chunk 129, tile 64x64", mk(3, 129, 64, 64)},
  };
}

TEST(ViewPathsForced, SplitsEveryOp) {
  std::vector<OpType> ops;
  for (const OpType& p : OpTypes())
    if (p.t == DType::kF32 || p.t == DType::kBF16 || p.t == DType::kI8 || p.name.rfind("gelu_tanh", 0) == 0) ops.push_back(p);
  for (const auto& [what, split] : ForcedSplits())
    for (const OpType& p : ops) {
      SCOPED_TRACE(p.name);
      ViewsUnderSplit(p, split, what);
    }
}

// ------------------------------------------------------------- every variant

// Every variant this CPU runs, forced on a view of each kRuns flavour (runs
// in place, splat g, splat x, gathered, in place) with runs of 70 (a vector
// tail; kBuffered calls a kernel as kFlat does): the view's result must be,
// bit for bit, the variant's on contiguous copies of the inputs (the
// variants' accuracy is the accuracy suite's business, not the views').
::testing::AssertionResult SameAsContiguous(const OpSpec& s, const Tensor& g, const Tensor& x, Tensor& out,
                                            const Expect& want) {
  // g and x have out's dims here (no API broadcast): copies in row-major order.
  Tensor gc(g.dtype(), out.dims()), xc(x.dtype(), out.dims()), oc(out.dtype(), out.dims());
  gc.Fill(g.Values());
  xc.Fill(x.Values());
  const RunResult r = RunOp(s, gc, xc, oc);
  if (!r.ok()) return ::testing::AssertionFailure() << "contiguous call: " << IsOk(r).message();
  const std::vector<double> exact = oc.Values();
  return RunPath(s, g, x, out, want, nullptr, nullptr, nullptr, &exact);
}

TEST(ViewPathsForced, EveryVariantOnRuns) {
  int run = 0;
  for (const actgrad::Variant& v : actgrad::Variants()) {
    if (!v.supported) continue;
    OpSpec s = Spec(v.op);
    if (v.op == Op::kGeluBwd && v.gelu_mode == GeluApprox::kTanh) s = GeluTanh();
    if (v.op == Op::kSoftshrinkBwd) s = Softshrink(0.5f);
    if (v.op == Op::kLogitGrad) s = Logit(0.25f);
    const DType t = v.dtype;
    SCOPED_TRACE(v.name);
    actgrad::KernelChoice forced;
    forced.variant = &v;
    forced.split.threads = 2;
    forced.split.chunk = 200;
    forced.split.tile_rows = 9;
    forced.split.tile_cols = 50;
    actgrad::ScopedKernelOverride override_kernel(forced);
    ++run;
    const int64_t c = 70;
    {
      Tensor g = Swapped4D(t, 1, c), x = Swapped4D(t, 1, c, 3), o = Roomy(t, {1, 4, 4, c});
      FillInputs(s, g, x, 12);
      EXPECT_TRUE(SameAsContiguous(s, g, x, o, Want(t, c, In::kPlain, In::kPlain)));
    }
    {
      Tensor g = ExpandedView(t, {9, c}, {false, true}), x = Slice2D(t, 9, c, c + 2, 1, 1), o = Roomy(t, {9, c});
      FillInputs(s, g, x, 13);
      EXPECT_TRUE(SameAsContiguous(s, g, x, o, Want(t, c, In::kSplat, In::kPlain)));
    }
    {
      Tensor g(t, {9, c}), x = ExpandedView(t, {9, c}, {false, true}), o = Slice2D(t, 9, c, c + 3, 2, 1);
      FillInputs(s, g, x, 14);
      EXPECT_TRUE(SameAsContiguous(s, g, x, o, Want(t, c, In::kPlain, In::kSplat)));
    }
    {
      Tensor g = Transposed(t, 13, c), x = Strided(t, {13, c}, {c, -1}), o = Roomy(t, {13, c});
      FillInputs(s, g, x, 15);
      EXPECT_TRUE(SameAsContiguous(s, g, x, o, Want(t, c, In::kGathered, In::kGathered)));
    }
    {
      Tensor g = Swapped4D(t, 1, c), x = Roomy(t, {1, 4, 4, c});
      FillInputs(s, g, x, 16);
      Tensor o = g.Alias();
      EXPECT_TRUE(SameAsContiguous(s, g, x, o, Want(t, c, In::kPlain, In::kPlain)));
    }
    {  // both inputs transposed, the result transposed (runs of 13 into the scratch tile)
      actgrad::KernelChoice tr = forced;
      tr.split.transpose_result = true;
      actgrad::ScopedKernelOverride override_tile(tr);
      Tensor g = Transposed(t, 13, c), x = Transposed(t, 13, c, 2), o = Slice2D(t, 13, c, c + 3, 1, 1);
      FillInputs(s, g, x, 17);
      EXPECT_TRUE(SameAsContiguous(s, g, x, o, Want(t, c, In::kGathered, In::kGathered)));
    }
  }
  ::testing::Test::RecordProperty("variants", run);
  std::printf("[ViewPathsForced] %d variants on views\n", run);
  EXPECT_GT(run, 0);
}

// The kernels read a tile's row offsets straight from the row table
// (RowWalker::Take: one stretch per block of the table). Every row of two
// plans, taken in stretches of several lengths from several start rows, has
// each operand's offset of the row-major index arithmetic: one whose lowest
// row dim is split (600 rows > kBlockRows) and whose operands step by
// unrelated strides (negative and zero too), and the benchmarks' strided
// view (row dims (64, 4, 4), dims 1 and 2 swapped: the block takes 16 of
// the 64 from the dim above it).
TEST(RowWalker, StretchesGiveEveryRowsOffsets) {
  struct Case {
    int64_t shape[4];
    int64_t strides[3][4];
  };
  const Case cases[] = {{{3, 5, 600, 16}, {{48000, 9600, 16, 1}, {-7, 1000, 3, 1}, {0, 16, 80, 1}}},
                        {{64, 4, 4, 64}, {{1024, 64, 256, 1}, {1024, 64, 256, 1}, {1024, 256, 64, 1}}},
                        {{63, 4, 4, 64}, {{1024, 64, 256, 1}, {1024, 64, 256, 1}, {1024, 256, 64, 1}}}};
  for (const Case& c : cases) {
    Plan p;
    p.dtype = DType::kF16;
    p.ndim = 4;
    actgrad::rt::OperandView* ops[3] = {&p.g, &p.x, &p.out};
    for (int i = 0; i < 4; ++i) {
      p.shape[i] = c.shape[i];
      for (int k = 0; k < 3; ++k) ops[k]->strides[i] = c.strides[k][i];
    }
    const int64_t rows = c.shape[0] * c.shape[1] * c.shape[2];
    p.numel = uint64_t(rows * c.shape[3]);
    auto expected = [&](int k, int64_t row) {
      const int64_t i2 = row % c.shape[2], i1 = row / c.shape[2] % c.shape[1], i0 = row / c.shape[2] / c.shape[1];
      return 2 * (i0 * c.strides[k][0] + i1 * c.strides[k][1] + i2 * c.strides[k][2]);  // bytes (fp16)
    };
    actgrad::rt::RowTable table;
    table.Build(p);
    // An odd outer dim has no power-of-two part to give: the strided view's
    // 16 rows (TakeAll's case).
    EXPECT_GE(table.block, c.shape[0] % 2 ? 16 : 200) << "rows " << rows;
    for (const int64_t start : {int64_t(0), int64_t(1), int64_t(199), int64_t(600), int64_t(rows - 1)}) {
      for (const int64_t want : {int64_t(1), int64_t(7), int64_t(256), int64_t(1024)}) {
        actgrad::rt::RowWalker walker(table, start);
        int64_t row = start;
        while (row < std::min(rows, start + 2000)) {
          int64_t outer[3];
          const int64_t* off[3];
          const int64_t m = walker.Take(std::min(want, rows - row), outer, off);
          ASSERT_GE(m, 1);
          ASSERT_LE(m, want);
          for (int64_t i = 0; i < m; ++i)
            for (int k = 0; k < 3; ++k)
              ASSERT_EQ(outer[k] + off[k][i], expected(k, row + i))
                  << "rows " << rows << " start " << start << " want " << want << " row " << row + i << " operand " << k;
          row += m;
        }
        // TakeAll: every row of a whole tile at once, from the table where one
        // block holds the tile, else from the scratch it fills.
        actgrad::rt::RowWalker all(table, start);
        std::vector<int64_t> sc(3 * size_t(want));
        int64_t* const scratch[3] = {sc.data(), sc.data() + want, sc.data() + 2 * want};
        for (int64_t at = start; at < std::min(rows, start + 2000);) {
          const int64_t nr = std::min(want, rows - at);
          int64_t outer[3];
          const int64_t* off[3];
          all.TakeAll(nr, outer, off, scratch);
          for (int64_t i = 0; i < nr; ++i)
            for (int k = 0; k < 3; ++k)
              ASSERT_EQ(outer[k] + off[k][i], expected(k, at + i))
                  << "TakeAll: rows " << rows << " start " << start << " want " << want << " row " << at + i
                  << " operand " << k;
          at += nr;
        }
      }
    }
  }
}

}  // namespace
}  // namespace apitest
