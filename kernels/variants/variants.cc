// Joins the per-file lists into the one variant list and runs a variant
// over threads.
#include "variants/thread_pool.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <unordered_map>

#include "variants/factor_tables.h"
#include "variants/registry.h"

namespace actgrad {

namespace {

struct List {
  std::vector<Variant> all;
  std::unordered_map<std::string_view, int> by_name;
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
    for (size_t i = 0; i < l.all.size(); ++i) l.by_name.emplace(l.all[i].name, int(i));
    return l;
  }();
  return list;
}

}  // namespace

const std::vector<Variant>& Variants() { return TheList().all; }

int TargetRank(std::string_view target) {
  // Arm as Highway's dispatch prefers them: the fixed-width SVE targets
  // (sve2_128: 128-bit SVE2 as on Neoverse N2; sve_256: 256-bit SVE as on V1)
  // before the scalable ones.
  static constexpr std::string_view kOrder[] = {
      "avx512fp16", "avx512bf16", "avx512", "avx3_spr", "avx3_zen4", "avx3_dl", "avx3",   "avx2",
      "sse4",       "sve2_128",   "sve_256", "sve2",    "sve",       "neon",    "emu128", "scalar"};
  for (int i = 0; i < int(std::size(kOrder)); ++i)
    if (target == kOrder[i]) return i;
  return int(std::size(kOrder));
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

const Variant* StreamingTwin(const Variant& v) {
  if (v.nt_stores) return &v;
  const auto runs = [](const Variant* t) { return t && t->supported ? t : nullptr; };
  if (const Variant* t = runs(FindVariant(v.name + ".nt"))) return t;
  const std::string own = ".u" + std::to_string(v.unroll) + ".";
  const size_t at = v.name.find(own);
  if (at == std::string::npos) return nullptr;
  for (const char* alt : {".u2.", ".u4."}) {
    std::string name = v.name;
    if (const Variant* t = runs(FindVariant(name.replace(at, own.size(), alt) + ".nt"))) return t;
  }
  return nullptr;
}

const Variant* PlainTwin(const Variant& v) {
  if (!v.nt_stores) return &v;
  constexpr std::string_view kNt = ".nt";
  if (!std::string_view(v.name).ends_with(kNt)) return nullptr;
  const Variant* t = FindVariant(std::string_view(v.name).substr(0, v.name.size() - kNt.size()));
  return t && t->supported && !t->nt_stores ? t : nullptr;
}

// The untuned default: the accurate reference-grade approximation for each
// op on the widest supported target, register upcast (bf16cvt is one: bf16
// widened in registers, rounded back by the native AVX512_BF16 conversion),
// unroll 2, plain stores.
const Variant* DefaultVariant(Op op, DType dtype, GeluApprox mode) {
  const char* approx = "exact";
  if (op == Op::kGeluBwd) approx = mode == GeluApprox::kTanh ? "tanh_hwy" : "erf_as";
  if (op == Op::kLogitGrad) approx = "div";
  const Variant* best = nullptr;
  for (const Variant& v : Variants()) {
    if (v.op != op || v.dtype != dtype || !v.supported || v.nt_stores || v.gelu_mode != mode) continue;
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
