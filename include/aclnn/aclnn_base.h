/* actgrad: aclnn status codes and executor control (CANN's aclnn_base.h subset). */
#ifndef ACTGRAD_ACLNN_ACLNN_BASE_H_
#define ACTGRAD_ACLNN_ACLNN_BASE_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACLNN_API ACL_FUNC_VISIBILITY

typedef int32_t aclnnStatus;

#define ACLNN_SUCCESS 0
#define ACLNN_ERR_PARAM_NULLPTR 161001
#define ACLNN_ERR_PARAM_INVALID 161002
#define ACLNN_ERR_RUNTIME_ERROR 361001
#define ACLNN_ERR_INNER 561000
#define ACLNN_ERR_INNER_NULLPTR 561103
#define ACLNN_ERR_INNER_TILING_ERROR 561003

/* Lets an executor be run more than once (CANN's default is once). */
ACLNN_API aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor);
ACLNN_API aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor);

#ifdef __cplusplus
}
#endif

#endif
