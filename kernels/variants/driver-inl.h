// The one kernel template: streams n elements of g and x through an op's
// vector body. Policies: storage type T (float, float16_t, bfloat16_t), the
// upcast strategy (per vector in registers, or staged through fp32 scratch),
// unroll (vectors per iteration) and non-temporal stores.
#if defined(ACTGRAD_DRIVER_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ACTGRAD_DRIVER_INL_H_
#undef ACTGRAD_DRIVER_INL_H_
#else
#define ACTGRAD_DRIVER_INL_H_
#endif

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "hwy/aligned_allocator.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "ops/ops-inl.h"
#include "variants/variant.h"

HWY_BEFORE_NAMESPACE();
namespace actgrad {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

enum class Upcast { kNone, kReg, kStaged };

// ---- loads and stores of fp32 lanes from/to storage type T ----------------
template <class DF>
HWY_INLINE hn::Vec<DF> LoadF(DF df, const float* p) { return hn::LoadU(df, p); }
// Highway 1.0.3 emulates fp16 conversions on targets without F16C (SSE4,
// EMU128) by truncation, and maps Inf/NaN to finite values. These targets get
// exact integer conversions (round to nearest even, specials kept) instead.
#undef ACTGRAD_OWN_F16_CONVERSIONS  // re-decided for each target
#if (HWY_ARCH_X86 && HWY_TARGET >= HWY_SSE4) || HWY_TARGET == HWY_EMU128
#define ACTGRAD_OWN_F16_CONVERSIONS 1
#endif

#ifdef ACTGRAD_OWN_F16_CONVERSIONS
template <class DF>
HWY_INLINE hn::Vec<DF> PromoteF16(DF df, hn::Vec<hn::Rebind<uint16_t, DF>> h) {
  const hn::RebindToUnsigned<DF> du;
  const auto b = hn::PromoteTo(du, h);
  const auto sign = hn::ShiftLeft<16>(hn::And(b, hn::Set(du, 0x8000u)));
  const auto exp = hn::And(hn::ShiftRight<10>(b), hn::Set(du, 0x1Fu));
  const auto man = hn::And(b, hn::Set(du, 0x3FFu));
  const auto normal = hn::Or(hn::ShiftLeft<23>(hn::Add(exp, hn::Set(du, 112u))), hn::ShiftLeft<13>(man));
  const auto special = hn::Or(hn::Set(du, 0x7F800000u), hn::ShiftLeft<13>(man));
  const auto sub = hn::BitCast(du, hn::Mul(hn::ConvertTo(df, hn::BitCast(hn::RebindToSigned<DF>(), man)),
                                           hn::Set(df, 5.9604644775390625e-08f)));
  auto bits = hn::IfThenElse(hn::Eq(exp, hn::Zero(du)), sub, normal);
  bits = hn::IfThenElse(hn::Eq(exp, hn::Set(du, 31u)), special, bits);
  return hn::BitCast(df, hn::Or(bits, sign));
}

template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> DemoteF16(DF df, hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto bits = hn::BitCast(du, v);
  const auto sign = hn::ShiftRight<16>(hn::And(bits, hn::Set(du, 0x80000000u)));
  const auto abs = hn::And(bits, hn::Set(du, 0x7FFFFFFFu));
  const auto lsb = hn::And(hn::ShiftRight<13>(abs), hn::Set(du, 1u));
  const auto normal = hn::ShiftRight<13>(hn::Sub(hn::Add(hn::Add(abs, hn::Set(du, 0xFFFu)), lsb), hn::Set(du, 0x38000000u)));
  // Below the smallest normal: adding 0.5 puts the fp16 ulp (2^-24) at the
  // fp32 ulp, so the FPU's own round-to-nearest-even does the rounding.
  const auto sub = hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(df, abs), hn::Set(df, 0.5f))), hn::Set(du, 0x3F000000u));
  auto r = hn::IfThenElse(hn::RebindMask(du, hn::Lt(hn::BitCast(di, abs), hn::Set(di, 0x38800000))), sub, normal);
  r = hn::IfThenElse(hn::RebindMask(du, hn::Gt(hn::BitCast(di, abs), hn::Set(di, 0x477FEFFF))), hn::Set(du, 0x7C00u), r);  // overflow, Inf
  r = hn::IfThenElse(hn::RebindMask(du, hn::Gt(hn::BitCast(di, abs), hn::Set(di, 0x7F800000))), hn::Set(du, 0x7E00u), r);  // NaN
  return hn::DemoteTo(hn::Rebind<uint16_t, DF>(), hn::BitCast(di, hn::Or(r, sign)));
}
#endif

template <class DF>
HWY_INLINE hn::Vec<DF> LoadF(DF df, const hwy::float16_t* p) {
#ifdef ACTGRAD_OWN_F16_CONVERSIONS
  const hn::Rebind<uint16_t, DF> du16;
  return PromoteF16(df, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)));
#else
  return hn::PromoteTo(df, hn::LoadU(hn::Rebind<hwy::float16_t, DF>(), p));
#endif
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadF(DF df, const hwy::bfloat16_t* p) {
  return hn::PromoteTo(df, hn::LoadU(hn::Rebind<hwy::bfloat16_t, DF>(), p));
}

// fp32 -> bf16 with round-to-nearest-even (Highway 1.0.3's DemoteTo
// truncates, which costs a whole bf16 ulp); NaN stays a quiet NaN.
template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> DemoteBF16Bits(DF df, hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto bits = hn::BitCast(du, v);
  const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
  auto rounded = hn::Add(hn::Add(bits, hn::Set(du, 0x7FFFu)), lsb);
  rounded = hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), hn::Or(bits, hn::Set(du, 0x00400000u)), rounded);
  return hn::DemoteTo(hn::Rebind<uint16_t, DF>(), hn::BitCast(di, hn::ShiftRight<16>(rounded)));
}

template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> DemoteBits(DF df, hn::Vec<DF> v, const hwy::float16_t*) {
#ifdef ACTGRAD_OWN_F16_CONVERSIONS
  return DemoteF16(df, v);
#else
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::BitCast(hn::Rebind<uint16_t, DF>(), hn::DemoteTo(dh, v));
#endif
}
template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> DemoteBits(DF df, hn::Vec<DF> v, const hwy::bfloat16_t*) {
  return DemoteBF16Bits(df, v);
}

template <class DF>
HWY_INLINE void StoreF(DF df, hn::Vec<DF> v, float* p) { hn::StoreU(v, df, p); }
template <class DF, typename T>
HWY_INLINE void StoreF(DF df, hn::Vec<DF> v, T* p) {
  hn::StoreU(DemoteBits(df, v, p), hn::Rebind<uint16_t, DF>(), reinterpret_cast<uint16_t*>(p));
}

// ---- the contiguous kernel -------------------------------------------------
template <typename T> constexpr DType DTypeOf();
template <> constexpr DType DTypeOf<float>() { return DType::kF32; }
template <> constexpr DType DTypeOf<hwy::float16_t>() { return DType::kF16; }
template <> constexpr DType DTypeOf<hwy::bfloat16_t>() { return DType::kBF16; }

// Elements [0, m) with m < one full vector: through an aligned stack buffer,
// so tails run the very same vector code as the body (same results).
template <class Op, typename T, class DF>
HWY_INLINE void PartialVector(DF df, const OpConsts<DF>& c, const T* g, const T* x, T* out, size_t m) {
  constexpr size_t kMax = HWY_MAX_BYTES / sizeof(float);
  HWY_ALIGN T gb[kMax] = {};
  HWY_ALIGN T xb[kMax] = {};
  HWY_ALIGN T ob[kMax];
  std::memcpy(gb, g, m * sizeof(T));
  std::memcpy(xb, x, m * sizeof(T));
  StoreF(df, Op::Apply(df, LoadF(df, gb), LoadF(df, xb), c), ob);
  std::memcpy(out, ob, m * sizeof(T));
}

// The largest number of fp32 lanes of any vector: a splat's copies.
inline constexpr size_t kMaxLanesF = HWY_MAX_BYTES / sizeof(float);

// A splat run's x (stride 0) is one element (variant.h Runs): one vector's
// worth of its copies written at `copies` (what the tails' partial loads
// read) and the run's x vector, bit for bit what loading a vector of copies
// from memory gives. fp32: a broadcast, stored as float. 16-bit: the bits
// broadcast and stored as uint16_t, then copied (memcpy) into `copies` and
// loaded through LoadF's conversion: never a vector stored as one lane type
// and loaded as another (a uint16_t store read back as fp16 lanes was
// reordered past the load on SVE: GCC 12, GELU fp16 at 512 bits, wrong
// results). The copies live in the kernel, not the runtime: a vector of
// copies and a pointer written per row cost as much as the kernel at 64K.
template <class DF, typename T>
HWY_INLINE hn::Vec<DF> SplatCopies(DF df, const T* x, T* copies) {
  if constexpr (std::is_same_v<T, float>) {
    const auto v = hn::Set(df, *x);
    hn::Store(v, df, copies);
    return v;
  } else {
    const hn::Rebind<uint16_t, DF> du;
    uint16_t b;
    std::memcpy(&b, x, sizeof(b));
    HWY_ALIGN uint16_t bits[kMaxLanesF];
    hn::Store(hn::Set(du, b), du, bits);
    std::memcpy(copies, bits, hn::Lanes(df) * sizeof(T));
    return LoadF(df, copies);
  }
}

template <size_t kXS, class DF, typename T>
HWY_INLINE hn::Vec<DF> XAt(DF df, const T* x, size_t o, hn::Vec<DF> splat) {
  if constexpr (kXS == 0) return splat;
  else return LoadF(df, x + o);
}

// A run's m elements after (or, streaming, before) its whole iterations:
// whole vectors with ordinary stores, then the partial rest. xs: x's stride
// (1, or 0 for a splat: x then points at SplatCopies' vector of copies, so
// PartialVector's copy of m < N elements reads copies too). One copy per op
// and storage type, not inlined into every loop: the op bodies are large
// (GELU's variants file took 173 s to compile with a tail inlined in each
// loop).
template <class Op, typename T, class DF>
HWY_NOINLINE void Tail(DF df, const OpConsts<DF>& c, const T* g, const T* x, T* out, size_t m, size_t xs) {
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= m; i += N) StoreF(df, Op::Apply(df, LoadF(df, g + i), LoadF(df, x + i * xs), c), out + i);
  if (i < m) PartialVector<Op>(df, c, g + i, x + i * xs, out + i, m - i);
}

// Past the L2 (variant.h kStreamPrefetchFrom): the lines of g and x that the
// step at element i will read kStreamPrefetchAhead bytes later.
template <typename T>
HWY_INLINE void PrefetchStep(const T* g, const T* x, size_t i, size_t step, size_t n) {
  const size_t ahead = kStreamPrefetchAhead / sizeof(T);
  if (i + step + ahead > n) return;
  for (size_t b = 0; b < step * sizeof(T); b += kCacheLineBytes) {
    PrefetchLine(reinterpret_cast<const char*>(g + i + ahead) + b);
    PrefetchLine(reinterpret_cast<const char*>(x + i + ahead) + b);
  }
}

// Every run of the call (variant.h RunAt; a contiguous call is one run), x
// with the element stride kXS (1, or 0 for a splat). The stride known at
// compile time and Runs' fields read once per call: read per run (the
// vector stores may alias anything, so the compiler reloads them) with
// strides multiplied at run time, a 64-element run cost ~75 instructions of
// set-up, more than its 8 vectors of work (Softshrink f32 [1024, 64] against
// [1024, 1]: 2.3x the contiguous instruction count, 0.57x PyTorch).
// out_dtype: the dtype the results are finally stored in (T, or the staged
// variant's storage type), for the overflow band of ops-inl.h.
template <class Op, typename T, int kUnroll, bool kNT, size_t kXS>
HWY_NOINLINE void RunLoop(const KernelArgs& a, DType out_dtype) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const auto c = MakeConsts(df, a.params, out_dtype);
  const size_t n = a.n;
  const Runs* rs = a.runs;
  const size_t count = rs ? rs->count : 1;
  const char* gb = rs ? rs->g : static_cast<const char*>(a.g);
  const char* xb = rs ? rs->x : static_cast<const char*>(a.x);
  char* ob = rs ? rs->out : static_cast<char*>(a.out);
  const int64_t* go = rs ? rs->g_off : kOneRunAtBase;
  const int64_t* xo = rs ? rs->x_off : kOneRunAtBase;
  const int64_t* oo = rs ? rs->out_off : kOneRunAtBase;
  const size_t ahead = rs ? rs->prefetch_runs : 0;
  [[maybe_unused]] HWY_ALIGN T xcopies[kXS == 0 ? kMaxLanesF : 1];
  for (size_t ri = 0; ri < count; ++ri) {
    if (ahead) PrefetchRunsAhead(gb, go, xb, xo, count, ahead, ri, n * sizeof(T));
    const T* g = reinterpret_cast<const T*>(gb + go[ri]);
    const T* x = reinterpret_cast<const T*>(xb + xo[ri]);
    T* out = reinterpret_cast<T*>(ob + oo[ri]);
    auto xsplat = hn::Zero(df);
    if constexpr (kXS == 0) {
      xsplat = SplatCopies(df, x, xcopies);
      x = xcopies;
    }
    size_t i = 0;
    size_t stream_end = n;  // streaming stores write [head, stream_end): whole cache lines
    if constexpr (kNT) {
      // Streaming stores only on whole cache lines: ordinary stores up to the
      // first line boundary and from the last one. A line written partly by
      // streaming stores leaves the write-combining buffer incomplete (and
      // its other part written separately): 64 MB written in 256-byte
      // pieces of rows not a multiple of 64 bytes long take about 4x as long
      // vector-aligned as line-aligned; on the tuner's transposed view of
      // 1024 x 23,171 f32 (SELU, two threads) `.nt` takes 2x as long peeled
      // to a vector as peeled to a line.
      const size_t align = std::max<size_t>(N * 4, kCacheLineBytes);  // bytes: a full vector, at least a line
      const size_t mis = reinterpret_cast<uintptr_t>(out) % align;
      size_t head = mis ? (align - mis) / sizeof(T) : 0;
      if (reinterpret_cast<uintptr_t>(out) % sizeof(T)) head = n;  // cannot align: no streaming
      head = std::min(head, n);
      if (head) Tail<Op>(df, c, g, x, out, head, kXS);
      i = head;
      stream_end = head + (n - head) * sizeof(T) / kCacheLineBytes * kCacheLineBytes / sizeof(T);
      static_assert(sizeof(T) == 4 || kUnroll % 2 == 0, "16-bit streaming needs an even unroll");
    }
    const size_t step = kUnroll * N;
    const bool prefetch = kXS == 1 && n * sizeof(T) >= kStreamPrefetchFrom;
    for (; i + step <= stream_end; i += step) {
      if (prefetch) PrefetchStep(g, x, i, step, n);
#if HWY_TARGET != HWY_SCALAR  // the scalar target has no Combine (and no streaming variants)
      if constexpr (kNT && sizeof(T) == 2) {
        const hn::Repartition<uint16_t, decltype(df)> du16;
        for (int k = 0; k < kUnroll; k += 2) {
          const size_t o0 = i + k * N, o1 = o0 + N;
          const auto r0 = Op::Apply(df, LoadF(df, g + o0), XAt<kXS>(df, x, o0, xsplat), c);
          const auto r1 = Op::Apply(df, LoadF(df, g + o1), XAt<kXS>(df, x, o1, xsplat), c);
          const auto both = hn::Combine(du16, DemoteBits(df, r1, out), DemoteBits(df, r0, out));
          hn::Stream(both, du16, reinterpret_cast<uint16_t*>(out + o0));
        }
      } else
#endif
      {
        for (int k = 0; k < kUnroll; ++k) {
          const size_t o = i + k * N;
          const auto r = Op::Apply(df, LoadF(df, g + o), XAt<kXS>(df, x, o, xsplat), c);
          if constexpr (kNT) hn::Stream(r, df, reinterpret_cast<float*>(out + o));
          else StoreF(df, r, out + o);
        }
      }
    }
    if (i < n) Tail<Op>(df, c, g + i, x + i * kXS, out + i, n - i, kXS);
  }
  if constexpr (kNT) hwy::FlushStream();
}

template <class Op, typename T, int kUnroll, bool kNT>
HWY_INLINE void RunInRegisters(const KernelArgs& a, DType out_dtype) {
  if (a.runs && a.runs->splat_x) RunLoop<Op, T, kUnroll, kNT, 0>(a, out_dtype);
  else RunLoop<Op, T, kUnroll, kNT, 1>(a, out_dtype);
}

// ---- conversion loops for the staged strategy ------------------------------
// m elements of src (stride 1, or 0: a splat vector of copies) to fp32.
template <typename T>
HWY_INLINE void ToF32(const T* src, size_t stride, float* dst, size_t m) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= m; i += N) hn::Store(LoadF(df, src + i * stride), df, dst + i);
  for (; i < m; ++i) {
    HWY_ALIGN T one[HWY_MAX_BYTES / sizeof(float)] = {};
    one[0] = src[i * stride];
    dst[i] = hn::GetLane(LoadF(df, one));
  }
}

template <typename T>
HWY_INLINE void FromF32(const float* src, T* dst, size_t m) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= m; i += N) StoreF(df, hn::Load(df, src + i), dst + i);
  if (i < m) {
    HWY_ALIGN float in[HWY_MAX_BYTES / sizeof(float)] = {};
    HWY_ALIGN T outb[HWY_MAX_BYTES / sizeof(float)];
    std::memcpy(in, src + i, (m - i) * sizeof(float));
    StoreF(df, hn::Load(df, in), outb);
    std::memcpy(dst + i, outb, (m - i) * sizeof(T));
  }
}

// The staging scratch of this thread: 2 x `stride` floats on the heap (the
// second array at +stride, so stride keeps it aligned), grown to the largest
// stride asked for so far (kDefaultStageTile at first), shared by every
// staged kernel of this target. (Thread-local arrays
// would put the scratch in static TLS per template instantiation on every
// thread's stack, which overflows worker thread stacks.)
HWY_INLINE float* StageScratch(size_t stride) {
  static thread_local hwy::AlignedFreeUniquePtr<float[]> buf;
  static thread_local size_t capacity = 0;
  if (capacity < stride) {
    capacity = std::max(stride, kDefaultStageTile);
    buf = hwy::AllocateAligned<float>(2 * capacity);
  }
  return buf.get();
}

// Ascend-style: cast a stage (up to Split::stage_tile elements, split.h)
// into an fp32 scratch buffer, compute in fp32, cast back. The scratch lives
// per thread.
template <class Op, typename T, int kUnroll>
HWY_NOINLINE void RunStaged(const KernelArgs& a) {
  const size_t n = a.n;
  size_t stage = a.stage_tile ? std::min(a.stage_tile, kMaxStageTile) : kDefaultStageTile;
  stage = std::min(stage, std::max<size_t>(n, 1));
  const size_t stride = (stage + 63) / 64 * 64;  // whole cache lines: the loads of sx are aligned
  float* sg = StageScratch(stride);
  float* sx = sg + stride;
  const size_t runs = RunCount(a);
  for (size_t ri = 0; ri < runs; ++ri) {
    RunPtrs<T> run = RunAt<T>(a, ri);
    HWY_ALIGN T xcopies[kMaxLanesF];
    if (run.xs == 0) {  // a splat's one element: ToF32 reads a vector of copies
      for (T& c : xcopies) c = *run.x;
      run.x = xcopies;
    }
    for (size_t i = 0; i < n; i += stage) {
      const size_t m = std::min(stage, n - i);
      ToF32(run.g + i, 1, sg, m);
      ToF32(run.x + i * run.xs, run.xs, sx, m);
      KernelArgs f32 = a;
      f32.g = sg;
      f32.x = sx;
      f32.out = sg;
      f32.n = m;
      f32.runs = nullptr;
      RunLoop<Op, float, kUnroll, false, 1>(f32, DTypeOf<T>());
      FromF32<T>(sg, run.out + i, m);
    }
  }
}

template <class Op, typename T, Upcast kUp, int kUnroll, bool kNT>
void Kernel(const KernelArgs& a) {
  if constexpr (kUp == Upcast::kStaged) {
    static_assert(!kNT, "staged variants use ordinary stores");
    RunStaged<Op, T, kUnroll>(a);
  } else {
    RunInRegisters<Op, T, kUnroll, kNT>(a, DTypeOf<T>());
  }
}

inline std::string ThisTargetName() {
  std::string s = hwy::TargetName(HWY_TARGET);
  for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

template <class Op, typename T, Upcast kUp, int kUnroll, bool kNT>
Variant MakeVariant(const char* approx, double claimed, GeluApprox mode) {
  Variant v;
  v.op = Op::kOp;
  v.dtype = DTypeOf<T>();
  v.upcast = kUp == Upcast::kNone ? "none" : kUp == Upcast::kReg ? "reg" : "staged";
  v.approx = approx;
  v.unroll = kUnroll;
  v.target = ThisTargetName();
  v.nt_stores = kNT;
  v.gelu_mode = mode;
  v.fn = &Kernel<Op, T, kUp, kUnroll, kNT>;
  v.supported = (hwy::SupportedTargets() & HWY_TARGET) != 0;
  v.claimed_max_err = claimed;
  v.name = std::string(OpName(v.op)) + "." + std::string(DTypeName(v.dtype)) + "." + v.upcast + "." + approx +
           ".u" + std::to_string(kUnroll) + "." + v.target + (kNT ? ".nt" : "");
  return v;
}

// One family, an op policy with one approximation: a variant per row of
// highway_shapes.inc on this target.
template <class Op>
void AppendFamily(std::vector<Variant>* out, const char* approx, double claimed, GeluApprox mode = GeluApprox::kNone) {
#define ACTGRAD_HWY_SHAPE(T, UP, UNROLL, NT) \
  out->push_back(MakeVariant<Op, T, Upcast::UP, UNROLL, NT>(approx, claimed, mode));
#include "variants/highway_shapes.inc"
#undef ACTGRAD_HWY_SHAPE
}

}  // namespace HWY_NAMESPACE
}  // namespace actgrad
HWY_AFTER_NAMESPACE();

#endif  // ACTGRAD_DRIVER_INL_H_
