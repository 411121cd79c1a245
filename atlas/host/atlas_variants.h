// The Atlas track's variant list: one entry per AscendC kernel variant
// (op x storage dtype x compute mode x GELU form x buffer count). Tests, the
// cost model, the tuner backend and the generated tiling-key table read it;
// code never parses the names, it reads these fields.
//
// Name: <op>.<dtype>.atlas.<upcast>.<approx>.db<buffers>, e.g.
// gelu_bwd.f16.atlas.upcast_f32.erf.db2
//   upcast: none (fp32 storage) | upcast_f32 (tile Cast to fp32 and back) |
//           f16native (fp16 vector arithmetic)
//   approx: erf | tanh (GELU), exact (the others)
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "actgrad/types.h"

namespace actgrad::atlas {

struct AtlasVariant {
  std::string name;
  Op op;
  DType dtype;
  uint32_t compute;    // AtlasCompute
  std::string upcast;  // none | upcast_f32 | f16native
  GeluApprox approx;   // which GELU formula (kNone for other ops)
  std::string approx_name;
  int buffers;         // 1 or 2 buffers per TQue
  const char* kernel;  // AscendC entry point
};

const std::vector<AtlasVariant>& AtlasVariants();
const AtlasVariant* FindAtlasVariant(std::string_view name);
const AtlasVariant* FindAtlasVariant(Op op, DType dtype, uint32_t compute, GeluApprox approx, int buffers);
// Variants of (op, dtype) computing the given GELU form (ignored for other ops).
std::vector<const AtlasVariant*> AtlasVariantsFor(Op op, DType dtype, GeluApprox approx = GeluApprox::kNone);
// dtypes the Atlas track supports for an op.
std::vector<DType> AtlasDTypes(Op op);

uint32_t AtlasOpOf(Op op);
uint32_t AtlasDTypeOf(DType t);

}  // namespace actgrad::atlas
