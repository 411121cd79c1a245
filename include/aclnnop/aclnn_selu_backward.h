/* actgrad: aclnnSeluBackward as declared by CANN (shared/spec/operators.md). */
#ifndef ACTGRAD_ACLNN_SELU_BACKWARD_H_
#define ACTGRAD_ACLNN_SELU_BACKWARD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLNN_API aclnnStatus aclnnSeluBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *result,
                                                         aclTensor *gradInput, uint64_t *workspaceSize,
                                                         aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnSeluBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                        aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
