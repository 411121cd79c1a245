#include "atlas_runner.h"

#include <cstring>
#include <string>

#include "kernel_entries.h"

namespace actgrad::atlas {

AscendEmu::LaunchResult RunOnEmulator(const AtlasVariant& v, const AtlasTilingData& t, const void* g,
                                      const void* x, void* out, const EmuOptions& o) {
  const uint64_t bytes = t.totalLength * DTypeSize(v.dtype);
  // Dry runs get distinct fake GM addresses: never dereferenced, still checked.
  if (o.dry_run) {
    g = g ? g : reinterpret_cast<const void*>(uintptr_t(0x100000000000ull));
    x = x ? x : reinterpret_cast<const void*>(uintptr_t(0x200000000000ull));
    out = out ? out : reinterpret_cast<void*>(uintptr_t(0x300000000000ull));
  }
  alignas(64) uint8_t tiling_gm[sizeof(AtlasTilingData) + 64];
  std::memcpy(tiling_gm, &t, sizeof t);

  AscendEmu::LaunchOptions lo;
  lo.threads = o.threads;
  lo.dry_run = o.dry_run;
  lo.record_trace = o.trace;
  lo.ub_capacity = uint32_t(o.ub_capacity);
  lo.only_cores = o.only_cores;
  lo.nan_propagating_minmax = o.nan_propagating_minmax;
  lo.gm = {{g, bytes, "gradOutput"}, {x, bytes, "input"}, {out, bytes, "gradInput"},
           {tiling_gm, sizeof(AtlasTilingData), "tiling"}};

  uint8_t* gp = static_cast<uint8_t*>(const_cast<void*>(g));
  uint8_t* xp = static_cast<uint8_t*>(const_cast<void*>(x));
  uint8_t* op = static_cast<uint8_t*>(out);
  switch (v.op) {
    case Op::kSeluBwd:
      return AscendEmu::Launch(v.kernel, t.blockDim, lo, [&] { selu_grad_custom(gp, xp, op, nullptr, tiling_gm); });
    case Op::kHardswishBwd:
      return AscendEmu::Launch(v.kernel, t.blockDim, lo, [&] { hardswish_grad_custom(gp, xp, op, nullptr, tiling_gm); });
    case Op::kGeluBwd:
      return AscendEmu::Launch(v.kernel, t.blockDim, lo, [&] { gelu_grad_custom(gp, xp, op, nullptr, tiling_gm); });
    case Op::kSoftshrinkBwd:
      return AscendEmu::Launch(v.kernel, t.blockDim, lo, [&] { softshrink_grad_custom(gp, xp, op, nullptr, tiling_gm); });
    case Op::kLogitGrad:  // aclnnLogitGrad order: x first
      return AscendEmu::Launch(v.kernel, t.blockDim, lo, [&] { logit_grad_custom(xp, gp, op, nullptr, tiling_gm); });
  }
  throw AscendEmu::Breach("ascend runner: unknown op");
}

}  // namespace actgrad::atlas
