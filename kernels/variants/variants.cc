// Joins the per-file lists into the one variant list and runs a variant
// over threads.
#include "variants/thread_pool.h"

#include <algorithm>
#include <unordered_map>

#include "variants/registry.h"

namespace actgrad {

bool ParseOp(std::string_view s, Op* out) {
  for (int i = 0; i < kNumOps; ++i)
    if (OpName(Op(i)) == s) return *out = Op(i), true;
  return false;
}

bool ParseDType(std::string_view s, DType* out) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (DTypeName(DType(i)) == s) return *out = DType(i), true;
  return false;
}

namespace {

struct List {
  std::vector<Variant> all;
  std::unordered_map<std::string_view, int> by_name;
};

const List& TheList() {
  static const List list = [] {
    List l;
    AppendScalarVariants(&l.all);
    AppendSimpleVariantsAllTargets(&l.all);
    AppendGeluVariantsAllTargets(&l.all);
    AppendLogitVariantsAllTargets(&l.all);
#ifdef ACTGRAD_HAVE_NATIVE_VARIANTS
    AppendNativeVariants(&l.all);
#endif
    for (size_t i = 0; i < l.all.size(); ++i) l.by_name.emplace(l.all[i].name, int(i));
    return l;
  }();
  return list;
}

// Preference of targets for the untuned default: widest supported first.
int TargetRank(const std::string& t) {
  static const char* kOrder[] = {"avx3", "avx2", "sse4", "sve2", "sve", "neon", "emu128", "scalar"};
  for (int i = 0; i < int(std::size(kOrder)); ++i)
    if (t == kOrder[i]) return i;
  return 100;
}

}  // namespace

const std::vector<Variant>& Variants() { return TheList().all; }

int VariantIndex(std::string_view name) {
  const auto& m = TheList().by_name;
  const auto it = m.find(name);
  return it == m.end() ? -1 : it->second;
}

const Variant* FindVariant(std::string_view name) {
  const int i = VariantIndex(name);
  return i < 0 ? nullptr : &Variants()[i];
}

// The untuned default: the accurate reference-grade approximation for each
// op on the widest supported target, register upcast, unroll 2, plain stores.
const Variant* DefaultVariant(Op op, DType dtype, GeluApprox mode) {
  const char* approx = "exact";
  if (op == Op::kGeluBwd) approx = mode == GeluApprox::kTanh ? "tanh_hwy" : "erf_as";
  if (op == Op::kLogitGrad) approx = "div";
  const Variant* best = nullptr;
  for (const Variant& v : Variants()) {
    if (v.op != op || v.dtype != dtype || !v.supported || v.nt_stores || v.gelu_mode != mode) continue;
    if (v.target != "scalar" && (v.approx != approx || v.unroll != 2 ||
                                 (v.upcast != "none" && v.upcast != "reg")))
      continue;
    if (!best || TargetRank(v.target) < TargetRank(best->target)) best = &v;
  }
  return best;
}

void RunVariant(const Variant& v, const KernelArgs& args, int threads, size_t chunk) {
  const size_t n = args.n;
  if (threads <= 1 || n < 2 * 1024) {
    v.fn(args);
    return;
  }
  const size_t esize = DTypeSize(v.dtype);
  // Default chunk: 4 pieces per thread, so a thread the OS deschedules (the
  // other core busy) holds up at most one piece while the others take the
  // rest; at least 4096 elements; whole cache lines (64 elements).
  if (chunk == 0) chunk = std::max<size_t>(4096, ((n + 4 * threads - 1) / (4 * threads) + 63) / 64 * 64);
  const int64_t pieces = int64_t((n + chunk - 1) / chunk);
  ParallelFor(threads, pieces, [&](int64_t first, int64_t last, int) {
    for (int64_t p = first; p < last; ++p) {
      const size_t start = size_t(p) * chunk;
      KernelArgs a = args;
      a.n = std::min(chunk, n - start);
      a.g = static_cast<const char*>(args.g) + start * esize;
      a.x = static_cast<const char*>(args.x) + start * esize;
      a.out = static_cast<char*>(args.out) + start * esize;
      v.fn(a);
    }
  });
}

}  // namespace actgrad
