// The aclnn objects behind the opaque C handles.
#pragma once
#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "runtime/plan.h"

struct aclTensor {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
  std::vector<int64_t> storage_dims;
  int64_t offset = 0;
  aclDataType dtype = ACL_DT_UNDEFINED;
  aclFormat format = ACL_FORMAT_ND;
  void* data = nullptr;
};

struct aclScalar {
  aclDataType dtype = ACL_DT_UNDEFINED;
  double value = 0.0;
};

struct aclOpExecutor {
  actgrad::rt::Plan plan;
  bool repeatable = false;
};
