/* actgrad: aclnnLogitGrad (note: x comes first) as declared by CANN (shared/spec/operators.md). */
#ifndef ACTGRAD_ACLNN_LOGIT_GRAD_H_
#define ACTGRAD_ACLNN_LOGIT_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnLogitGradGetWorkspaceSize(const aclTensor *x, const aclTensor *dy, double eps,
                                                      const aclTensor *out, uint64_t *workspaceSize,
                                                      aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnLogitGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                     aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
