// DType <-> aclDataType: the mapping the runtime validates tensors with, and
// the one the tools that build aclTensors (benchmarks, tuner) use. The API
// tests keep their own table on purpose: an oracle independent of this one.
#pragma once
#include "acl/acl_base.h"
#include "actgrad/types.h"

namespace actgrad {

constexpr aclDataType ToAclDataType(DType t) {
  switch (t) {
    case DType::kF32: return ACL_FLOAT;
    case DType::kF16: return ACL_FLOAT16;
    case DType::kBF16: return ACL_BF16;
    case DType::kI32: return ACL_INT32;
    case DType::kI8: return ACL_INT8;
  }
  return ACL_DT_UNDEFINED;
}

// False for an aclDataType (or any int: tensors keep the raw value) that is
// no kernel dtype.
constexpr bool FromAclDataType(int acl_dtype, DType* out) {
  switch (acl_dtype) {
    case ACL_FLOAT: *out = DType::kF32; return true;
    case ACL_FLOAT16: *out = DType::kF16; return true;
    case ACL_BF16: *out = DType::kBF16; return true;
    case ACL_INT32: *out = DType::kI32; return true;
    case ACL_INT8: *out = DType::kI8; return true;
    default: return false;
  }
}

}  // namespace actgrad
