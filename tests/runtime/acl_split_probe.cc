// runtime.acl_split.link_with_stub: a program that links CANN's libascendcl
// (here a stub of every function include/acl/*.h declares, answering 990000)
// and the rest of the project: the Atlas chain (actgrad_atlas_variants ->
// actgrad_internal) with every object of actgrad_core forced in. It links
// (no second aclrtMalloc), its ACL calls reach the stub, and the aclnn ops
// run without the project's ACL runtime (on the default stream; a stream the
// CPU runtime did not make is refused, never run on).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_gelu_backward.h"
#ifdef ACTGRAD_PROBE_ATLAS
#include "atlas_variants.h"
#endif

namespace {
int failures = 0;
void Expect(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what);
  failures += !ok;
}
}  // namespace

int main() {
  void* p = nullptr;
  Expect(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST) == 990000, "aclrtMalloc is the stub's");
  Expect(aclInit(nullptr) == 990000, "aclInit is the stub's");
  Expect(std::strcmp(aclGetRecentErrMsg(), "stub libascendcl") == 0, "aclGetRecentErrMsg is the stub's");
  Expect(aclDataTypeSize(ACL_FLOAT) == 990000, "aclDataTypeSize is the stub's");
#ifdef ACTGRAD_PROBE_ATLAS
  Expect(!actgrad::atlas::AtlasVariants().empty(), "the Atlas variant list is linked");
#endif
  // An aclnn op of the project, on operands in host memory.
  const int64_t dims[1] = {4}, strides[1] = {1};
  std::vector<float> g(4, 1.0f), x = {-1.0f, 0.0f, 0.5f, 2.0f}, out(4, -7.0f);
  aclTensor* tg = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, g.data());
  aclTensor* tx = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, x.data());
  aclTensor* to = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, out.data());
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  Expect(aclnnGeluBackwardGetWorkspaceSize(tg, tx, to, &ws, &e) == 0 && ws == 0, "aclnn phase one");
  long foreign_stream = 0;  // what CANN's aclrtCreateStream would hand out: not a CPU runtime stream
  Expect(aclnnGeluBackward(nullptr, 0, e, &foreign_stream) != 0, "a stream of another runtime is refused");
  Expect(aclnnGeluBackward(nullptr, 0, e, nullptr) == 0, "aclnn phase two on the default stream");
  const float want[4] = {-0.0833155f, 0.5f, 0.8674951f, 1.0852318f};  // g * GELU'(x), exact erf form
  bool close = true;
  for (int i = 0; i < 4; ++i) close = close && std::fabs(out[i] - want[i]) <= 1e-3f * std::fabs(want[i]);
  Expect(close, "GELU backward values");
  aclDestroyTensor(tg);
  aclDestroyTensor(tx);
  aclDestroyTensor(to);
  std::printf("%d failures\n", failures);
  return failures ? 1 : 0;
}
