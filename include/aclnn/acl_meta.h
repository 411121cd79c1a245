/* actgrad: aclnn tensor and scalar objects (CANN's aclnn/acl_meta.h subset). */
#ifndef ACTGRAD_ACLNN_ACL_META_H_
#define ACTGRAD_ACLNN_ACL_META_H_

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aclTensor aclTensor;
typedef struct aclScalar aclScalar;
typedef struct aclOpExecutor aclOpExecutor;

/* viewDims/stride/offset in elements; storageDims describe the buffer at
 * tensorData. Returns NULL (with aclGetRecentErrMsg set) on bad arguments. */
ACL_FUNC_VISIBILITY aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum,
                                               aclDataType dataType, const int64_t *stride, int64_t offset,
                                               aclFormat format, const int64_t *storageDims,
                                               uint64_t storageDimsNum, void *tensorData);
ACL_FUNC_VISIBILITY aclScalar *aclCreateScalar(void *value, aclDataType dataType);
ACL_FUNC_VISIBILITY int aclDestroyTensor(const aclTensor *tensor);
ACL_FUNC_VISIBILITY int aclDestroyScalar(const aclScalar *scalar);

ACL_FUNC_VISIBILITY int aclGetViewShape(const aclTensor *tensor, int64_t **viewDims, uint64_t *viewDimsNum);
ACL_FUNC_VISIBILITY int aclGetStorageShape(const aclTensor *tensor, int64_t **storageDims,
                                           uint64_t *storageDimsNum);
ACL_FUNC_VISIBILITY int aclGetViewStrides(const aclTensor *tensor, int64_t **stridesValue,
                                          uint64_t *stridesNum);
ACL_FUNC_VISIBILITY int aclGetViewOffset(const aclTensor *tensor, int64_t *offset);
ACL_FUNC_VISIBILITY int aclGetFormat(const aclTensor *tensor, aclFormat *format);
ACL_FUNC_VISIBILITY int aclGetDataType(const aclTensor *tensor, aclDataType *dataType);

#ifdef __cplusplus
}
#endif

#endif
