// The aclnn objects behind the opaque C handles.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "runtime/plan.h"
#include "runtime/raw_enum.h"

namespace actgrad::rt {
bool IsAclDataType(int32_t raw);  // one of aclDataType's enumerators
bool IsAclFormat(int32_t raw);    // one of aclFormat's enumerators
}  // namespace actgrad::rt
struct aclTensor;
namespace actgrad::rt {
// Fills the tensor's cached facts (aclTensor, below) from its fields.
void ComputeTensorFacts(aclTensor* t);
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
  // Facts of the view, computed once by aclCreateTensor (a tensor never
  // changes) so that phase one need not recompute them per call:
  size_t checked_esize = 0;      // CheckTensor passes with this element size (its dtype's); 0: run it
  bool no_self_overlap = false;  // CheckNoSelfOverlap passes
  // Non-empty, passed CheckTensor, and every dim of size > 1 has the
  // row-major contiguous stride: the view is numel elements in a row.
  bool contiguous = false;
  bool zero_stride = false;      // some dim has stride 0
  uint64_t numel = 0;            // when contiguous
};

struct aclScalar {
  aclDataType dtype = ACL_DT_UNDEFINED;
  double value = 0.0;
};

// Executors live in a SlotPool (runtime/slot_pool.h, ops.cc: never freed, so
// phase one allocates nothing and any handle can be checked). state: the
// pool's generation and busy bits, then kExecLive (phase one published it and
// no one-shot launch or destroy has taken it since), kExecRepeatable, and the
// launches running now in the top bits (kExecInFlight each). A launch claims
// it by a compare-exchange (a one-shot one clears kExecLive as it claims); the
// thread that leaves it neither live nor running returns the slot: the last
// launch of one destroyed meanwhile, or the destroy itself.
namespace actgrad::rt {
// a and b have the same dims (a loop: the vectors are short, memcmp's call costs more).
inline bool SameDims(const aclTensor* a, const aclTensor* b) {
  const size_t n = a->dims.size();
  if (n != b->dims.size()) return false;
  const int64_t* da = a->dims.data();
  const int64_t* db = b->dims.data();
  for (size_t i = 0; i < n; ++i)
    if (da[i] != db[i]) return false;
  return true;
}

inline constexpr uint64_t kExecLive = uint64_t(1) << 33;
inline constexpr uint64_t kExecRepeatable = uint64_t(1) << 34;
inline constexpr uint64_t kExecInFlight = uint64_t(1) << 40;
}  // namespace actgrad::rt

struct aclOpExecutor {
  std::atomic<uint64_t> state{0};
  std::atomic<uint64_t> workspace{0};  // plan.workspace, readable before a launch claims the executor
  actgrad::rt::Plan plan;
};
