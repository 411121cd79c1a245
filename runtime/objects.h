// The aclnn objects behind the opaque C handles.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "runtime/plan.h"

namespace actgrad::rt {
// The int behind an enum argument, read without an enum load: a caller may
// pass any int32 as aclDataType/aclFormat (e.g. (aclDataType)12345), and
// loading that as the enum is undefined behaviour.
template <class Enum>
int32_t RawEnum(const Enum& e) {
  static_assert(sizeof(Enum) == sizeof(int32_t));
  int32_t raw;
  std::memcpy(&raw, &e, sizeof raw);
  return raw;
}
bool IsAclDataType(int32_t raw);  // one of aclDataType's enumerators
bool IsAclFormat(int32_t raw);    // one of aclFormat's enumerators
}  // namespace actgrad::rt

struct aclTensor {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
  std::vector<int64_t> storage_dims;
  int64_t offset = 0;
  int32_t dtype = ACL_DT_UNDEFINED;  // as the caller passed it; validated by the ops
  int32_t format = ACL_FORMAT_ND;    // likewise
  // aclCreateTensor was given no strides and the contiguous ones do not fit
  // int64 (they are stored saturated); the ops refuse such a tensor.
  bool strides_overflow = false;
  void* data = nullptr;
};

struct aclScalar {
  aclDataType dtype = ACL_DT_UNDEFINED;
  double value = 0.0;
};

// Phase two claims an executor under the executor mutex (ops.cc): a one-shot
// one leaves the live set before it runs, a repeatable one counts its runs in
// flight so a destroy meanwhile is deferred to the last of them.
struct aclOpExecutor {
  actgrad::rt::Plan plan;
  bool repeatable = false;
  int in_flight = 0;             // launches of a repeatable executor running now
  bool destroy_pending = false;  // destroyed while in flight: the last launch deletes
};
