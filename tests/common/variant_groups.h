// Test parameters shared by the per-variant suites (tests/kernels,
// tests/tools/accuracy): one gtest parameter per (op, dtype) of the variant list.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "actgrad/types.h"
#include "variants/variant.h"

namespace actgrad::test {

struct VariantGroup {
  Op op;
  DType dtype;
};

// Every (op, dtype) that has at least one variant, in enum order.
inline std::vector<VariantGroup> VariantGroups() {
  std::vector<VariantGroup> g;
  for (int op = 0; op < kNumOps; ++op)
    for (int t = 0; t < kNumDTypes; ++t) {
      bool any = false;
      for (const Variant& v : Variants()) any = any || (v.op == Op(op) && v.dtype == DType(t));
      if (any) g.push_back({Op(op), DType(t)});
    }
  return g;
}

// gtest parameter names: <op>_<dtype>.
inline std::string VariantGroupName(const ::testing::TestParamInfo<VariantGroup>& info) {
  return std::string(OpName(info.param.op)) + "_" + std::string(DTypeName(info.param.dtype));
}

}  // namespace actgrad::test
