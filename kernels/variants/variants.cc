// Joins the per-file lists into the one variant list and runs a variant
// over threads.
#include "variants/thread_pool.h"

#include <algorithm>
#include <compare>
#include <cstdlib>
#include <map>
#include <string>
#include <unordered_map>

#include "variants/factor_tables.h"
#include "variants/registry.h"
#include "variants/targets.h"

namespace actgrad {

namespace {

// Every field that says what a variant computes and how, its name aside:
// twins differ in the stores (and unroll) only.
struct Fields {
  Op op;
  DType dtype;
  std::string_view upcast, approx, target;
  GeluApprox gelu_mode;
  int unroll;
  bool nt_stores;
  auto operator<=>(const Fields&) const = default;
};
Fields FieldsOf(const Variant& v, int unroll, bool nt_stores) {
  return {v.op, v.dtype, v.upcast, v.approx, v.target, v.gelu_mode, unroll, nt_stores};
}

struct List {
  std::vector<Variant> all;
  std::unordered_map<std::string_view, int> by_name;
  std::map<Fields, int> by_fields;
};

const List& TheList() {
  static const List list = [] {
    List l;
    AppendScalarVariants(&l.all);
    AppendSeluHardswishSoftshrinkVariantsAllTargets(&l.all);
    AppendGeluVariantsAllTargets(&l.all);
    AppendLogitVariantsAllTargets(&l.all);
#ifdef ACTGRAD_HAVE_NATIVE_VARIANTS
    AppendNativeVariants(&l.all);
#endif
    for (size_t i = 0; i < l.all.size(); ++i) {
      const Variant& v = l.all[i];
      l.by_name.emplace(v.name, int(i));
      l.by_fields.emplace(FieldsOf(v, v.unroll, v.nt_stores), int(i));
    }
    return l;
  }();
  return list;
}

bool RunsHere(const Variant& v) { return v.supported; }

// The variant with v's fields but `unroll` and `nt_stores`, if `runs` accepts it.
const Variant* RunnableSibling(const Variant& v, int unroll, bool nt_stores,
                               const std::function<bool(const Variant&)>& runs = RunsHere) {
  const List& l = TheList();
  const auto it = l.by_fields.find(FieldsOf(v, unroll, nt_stores));
  const Variant* t = it == l.by_fields.end() ? nullptr : &l.all[size_t(it->second)];
  return t && runs(*t) ? t : nullptr;
}

}  // namespace

const std::vector<Variant>& Variants() { return TheList().all; }

int TargetRank(std::string_view target) {
  int i = 0;
  while (i < int(std::size(kTargets)) && kTargets[i].name != target) ++i;
  return i;
}

int VariantIndex(std::string_view name) {
  const auto& m = TheList().by_name;
  const auto it = m.find(name);
  return it == m.end() ? -1 : it->second;
}

const Variant* FindVariant(std::string_view name) {
  const int i = VariantIndex(name);
  return i < 0 ? nullptr : &Variants()[i];
}

const Variant* StreamingTwin(const Variant& v) { return StreamingTwin(v, RunsHere); }

const Variant* StreamingTwin(const Variant& v, const std::function<bool(const Variant&)>& runs) {
  if (v.nt_stores) return &v;
  for (int unroll : {v.unroll, 2, 4})
    if (const Variant* t = RunnableSibling(v, unroll, true, runs)) return t;
  return nullptr;
}

const Variant* PlainTwin(const Variant& v) {
  return v.nt_stores ? RunnableSibling(v, v.unroll, false) : &v;
}

// The untuned default: the accurate reference-grade approximation for each
// op on the widest supported target, register upcast (bf16cvt is one: bf16
// widened in registers, rounded back by the native AVX512_BF16 conversion),
// unroll 2, plain stores. GELU's rule-class pair is 2.5e-6 (erf_as) and
// 2.1e-5 (tanh_hwy) from the reference in f32; the near-exact pair 2.8e-7
// (erf_r6) and 9.3e-7 (tanh_exp) (docs/accuracy.md).
const Variant* DefaultVariant(Op op, DType dtype, GeluApprox mode, AccuracyClass cls) {
  return DefaultVariant(op, dtype, mode, cls, [](const Variant& v) { return v.supported; });
}

const Variant* DefaultVariant(Op op, DType dtype, GeluApprox mode, AccuracyClass cls,
                              const std::function<bool(const Variant&)>& runs) {
  const bool tanh = mode == GeluApprox::kTanh;
  const char* approx = "exact";
  if (op == Op::kGeluBwd && cls == AccuracyClass::kNearExact) approx = tanh ? "tanh_exp" : "erf_r6";
  else if (op == Op::kGeluBwd) approx = tanh ? "tanh_hwy" : "erf_as";
  if (op == Op::kLogitGrad) approx = "div";
  const Variant* best = nullptr;
  for (const Variant& v : Variants()) {
    if (v.op != op || v.dtype != dtype || !runs(v) || v.nt_stores || v.gelu_mode != mode) continue;
    if (v.target != "scalar" && (v.approx != approx || v.unroll != 2 ||
                                 (v.upcast != "none" && v.upcast != "reg" && v.upcast != "bf16cvt")))
      continue;
    if (!best || TargetRank(v.target) < TargetRank(best->target)) best = &v;
  }
  return best;
}

void PrepareVariant(const Variant& v, const OpParams& p) {
  if (v.factor_table) PrepareFactorTable(v.op, v.dtype, p);
}

void RunVariant(const Variant& v, const KernelArgs& args, const Split& split) {
  KernelArgs whole = args;
  whole.stage_tile = size_t(split.stage_tile);
  const size_t n = args.n;
  if (split.threads <= 1 || n < kSerialBelow) {
    v.fn(whole);
    return;
  }
  const size_t esize = DTypeSize(v.dtype);
  const size_t chunk = split.chunk > 0 ? size_t(split.chunk) : DefaultChunk(n, split.threads);
  const int64_t chunks = int64_t((n + chunk - 1) / chunk);
  ParallelFor(split.threads, chunks, [&](int64_t first, int64_t last, int) {
    for (int64_t c = first; c < last; ++c) {
      const size_t start = size_t(c) * chunk;
      KernelArgs a = whole;
      a.n = std::min(chunk, n - start);
      a.g = static_cast<const char*>(args.g) + start * esize;
      a.x = static_cast<const char*>(args.x) + start * esize;
      a.out = static_cast<char*>(args.out) + start * esize;
      v.fn(a);
    }
  });
}

}  // namespace actgrad
