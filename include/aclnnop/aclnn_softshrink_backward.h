/* actgrad: aclnnSoftshrinkBackward as declared by CANN (shared/spec/operators.md). */
#ifndef ACTGRAD_ACLNN_SOFTSHRINK_BACKWARD_H_
#define ACTGRAD_ACLNN_SOFTSHRINK_BACKWARD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnSoftshrinkBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,
                                                               const aclScalar *lambd, aclTensor *gradInput,
                                                               uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnSoftshrinkBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                              const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
