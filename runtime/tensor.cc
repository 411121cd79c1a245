// aclCreateTensor/aclCreateScalar and accessors. Creation only records what
// the caller said; the ops validate (so bad views get the op's status code).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "actgrad/half.h"
#include "runtime/error.h"
#include "runtime/objects.h"
#include "runtime/plan.h"

using actgrad::rt::Fail;
using actgrad::rt::RawEnum;

namespace {
constexpr uint64_t kMaxCreateDims = 64;  // far above the ops' 8; keeps garbage counts out
}

namespace actgrad::rt {
bool IsAclDataType(int32_t raw) {
  switch (raw) {
    case ACL_DT_UNDEFINED: case ACL_FLOAT: case ACL_FLOAT16: case ACL_INT8: case ACL_INT32: case ACL_UINT8:
    case ACL_INT16: case ACL_UINT16: case ACL_UINT32: case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE:
    case ACL_BOOL: case ACL_STRING: case ACL_COMPLEX64: case ACL_COMPLEX128: case ACL_BF16:
      return true;
    default: return false;
  }
}
bool IsAclFormat(int32_t raw) {
  switch (raw) {
    case ACL_FORMAT_UNDEFINED: case ACL_FORMAT_NCHW: case ACL_FORMAT_NHWC: case ACL_FORMAT_ND:
    case ACL_FORMAT_NC1HWC0: case ACL_FORMAT_FRACTAL_Z: case ACL_FORMAT_NCDHW: case ACL_FORMAT_NDHWC:
      return true;
    default: return false;
  }
}

void ComputeTensorFacts(aclTensor* t) {
  DType dt;  // the element size phase one checks with: one of the ops' dtypes
  const size_t esize = FromAclDataType(t->dtype, &dt) ? DTypeSize(dt) : 0;
  t->checked_esize = esize > 0 && CheckTensor(nullptr, nullptr, t, esize, /*report=*/false) == 0 ? esize : 0;
  t->no_self_overlap = CheckNoSelfOverlap(nullptr, nullptr, t, /*report=*/false) == 0;
  t->zero_stride = std::find(t->strides.begin(), t->strides.end(), 0) != t->strides.end();
  t->contiguous = false;
  t->numel = 0;
  if (t->checked_esize == 0 || std::find(t->dims.begin(), t->dims.end(), 0) != t->dims.end()) return;
  uint64_t numel = 1;  // fits: CheckTensor passed
  bool contiguous = true;
  for (size_t i = t->dims.size(); i-- > 0;) {
    if (t->dims[i] > 1 && t->strides[i] != int64_t(numel)) contiguous = false;
    numel *= uint64_t(t->dims[i]);
  }
  t->contiguous = contiguous;
  t->numel = numel;
}

}  // namespace actgrad::rt

extern "C" {

aclTensor* aclCreateTensor(const int64_t* view_dims, uint64_t view_dims_num, aclDataType data_type,
                           const int64_t* stride, int64_t offset, aclFormat format, const int64_t* storage_dims,
                           uint64_t storage_dims_num, void* tensor_data) {
  if ((view_dims_num > 0 && !view_dims) || (storage_dims_num > 0 && !storage_dims)) {
    Fail(ACLNN_ERR_PARAM_NULLPTR, "aclCreateTensor: viewDims or storageDims is null with a nonzero count");
    return nullptr;
  }
  if (view_dims_num > kMaxCreateDims || storage_dims_num > kMaxCreateDims) {
    Fail(ACLNN_ERR_PARAM_INVALID, "aclCreateTensor: %llu dims is more than %llu",
         (unsigned long long)std::max(view_dims_num, storage_dims_num), (unsigned long long)kMaxCreateDims);
    return nullptr;
  }
  auto* t = new aclTensor;
  t->dims.assign(view_dims, view_dims + view_dims_num);
  if (stride) {
    t->strides.assign(stride, stride + view_dims_num);
  } else {  // contiguous strides; past int64 they saturate and are flagged
    t->strides.resize(view_dims_num);
    int64_t s = 1;
    for (uint64_t i = view_dims_num; i-- > 0;) {
      t->strides[i] = t->strides_overflow ? INT64_MAX : s;
      if (i > 0 && __builtin_mul_overflow(s, std::max<int64_t>(view_dims[i], 1), &s)) t->strides_overflow = true;
    }
  }
  t->storage_dims.assign(storage_dims, storage_dims + storage_dims_num);
  t->offset = offset;
  t->dtype = RawEnum(data_type);
  t->format = RawEnum(format);
  t->data = tensor_data;
  actgrad::rt::ComputeTensorFacts(t);
  return t;
}

aclScalar* aclCreateScalar(void* value, aclDataType data_type) {
  if (!value) {
    Fail(ACLNN_ERR_PARAM_NULLPTR, "aclCreateScalar: value is null");
    return nullptr;
  }
  double v;
  switch (RawEnum(data_type)) {
    case ACL_FLOAT: { float f; std::memcpy(&f, value, 4); v = f; break; }
    case ACL_DOUBLE: std::memcpy(&v, value, 8); break;
    case ACL_FLOAT16: { uint16_t h; std::memcpy(&h, value, 2); v = actgrad::HalfToFloat(h); break; }
    case ACL_BF16: { uint16_t h; std::memcpy(&h, value, 2); v = actgrad::BF16ToFloat(h); break; }
    case ACL_INT32: { int32_t i; std::memcpy(&i, value, 4); v = i; break; }
    case ACL_INT64: { int64_t i; std::memcpy(&i, value, 8); v = double(i); break; }
    case ACL_INT8: { int8_t i; std::memcpy(&i, value, 1); v = i; break; }
    case ACL_UINT8: { uint8_t i; std::memcpy(&i, value, 1); v = i; break; }
    case ACL_BOOL: { uint8_t i; std::memcpy(&i, value, 1); v = i != 0; break; }
    default:
      Fail(ACLNN_ERR_PARAM_INVALID, "aclCreateScalar: unsupported dataType %d", RawEnum(data_type));
      return nullptr;
  }
  auto* s = new aclScalar;
  s->dtype = data_type;  // one of the enumerators above
  s->value = v;
  return s;
}

int aclDestroyTensor(const aclTensor* t) {
  delete t;
  return ACLNN_SUCCESS;
}

int aclDestroyScalar(const aclScalar* s) {
  delete s;
  return ACLNN_SUCCESS;
}

int aclGetViewShape(const aclTensor* t, int64_t** dims, uint64_t* num) {
  if (!t || !dims || !num) return Fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetViewShape: null argument");
  *num = t->dims.size();
  *dims = new int64_t[t->dims.size() + 1];
  std::copy(t->dims.begin(), t->dims.end(), *dims);
  return ACLNN_SUCCESS;
}

int aclGetStorageShape(const aclTensor* t, int64_t** dims, uint64_t* num) {
  if (!t || !dims || !num) return Fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetStorageShape: null argument");
  *num = t->storage_dims.size();
  *dims = new int64_t[t->storage_dims.size() + 1];
  std::copy(t->storage_dims.begin(), t->storage_dims.end(), *dims);
  return ACLNN_SUCCESS;
}

int aclGetViewStrides(const aclTensor* t, int64_t** strides, uint64_t* num) {
  if (!t || !strides || !num) return Fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetViewStrides: null argument");
  *num = t->strides.size();
  *strides = new int64_t[t->strides.size() + 1];
  std::copy(t->strides.begin(), t->strides.end(), *strides);
  return ACLNN_SUCCESS;
}

int aclGetViewOffset(const aclTensor* t, int64_t* offset) {
  if (!t || !offset) return Fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetViewOffset: null argument");
  *offset = t->offset;
  return ACLNN_SUCCESS;
}

int aclGetFormat(const aclTensor* t, aclFormat* format) {
  if (!t || !format) return Fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetFormat: null argument");
  // A value that is no enumerator reads back as UNDEFINED (never as an invalid enum).
  *format = actgrad::rt::IsAclFormat(t->format) ? static_cast<aclFormat>(t->format) : ACL_FORMAT_UNDEFINED;
  return ACLNN_SUCCESS;
}

int aclGetDataType(const aclTensor* t, aclDataType* dtype) {
  if (!t || !dtype) return Fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetDataType: null argument");
  *dtype = actgrad::rt::IsAclDataType(t->dtype) ? static_cast<aclDataType>(t->dtype) : ACL_DT_UNDEFINED;
  return ACLNN_SUCCESS;
}

}  // extern "C"
