// The emulator behind CANN's kernel launch: what the generated
// aclrtlaunch_<kernel> wrappers (launch.cmake) call when the project is built
// without CANN. A launch is a task of its stream, checked and run the way
// the project's runtime runs every stream task (runtime/acl_objects.h
// CheckTaskStream; in order, at enqueue), so events recorded on the stream
// before and after it bracket the emulated kernel. Errors come back where
// CANN reports them:
//  - a stream that is not live or not of the calling thread's context, a
//    block dim outside [1, 65535]: the launch's return code, with
//    aclGetRecentErrMsg saying why;
//  - a fault of the kernel (an emulator breach: a GM access outside the
//    launch's buffers, a trap, a broken queue discipline, a null GM address):
//    the launch returns 0 and the stream's next aclrtSynchronizeStream returns
//    ACL_ERROR_RT_AICORE_EXCEPTION (507015) with the breach as the message.
//    On the default stream (nullptr), which holds no deferred error here, the
//    launch returns that code itself.
#pragma once
#include <cstdint>
#include <functional>
#include <span>

#include "acl/acl_base.h"

namespace actgrad::atlas {

// One GM argument of a launch, by the kernel's parameter name.
struct GmArg {
  const char* name;
  void* address;
};

// The largest block dim a launch takes (CANN's <<<>>> and aclrtlaunch_*).
inline constexpr uint32_t kMaxLaunchBlockDim = 65535;

// Runs `body` (the kernel's entry point) on block_dim emulated cores as a
// task of `stream`. The GM the kernel may touch is what our kernels' tiling
// says (atlas_tiling_data.h): `tiling` holds an AtlasTilingData; every other
// argument but `workspace` is a tensor of totalLength elements of its dtype.
uint32_t EmuLaunch(const char* kernel, uint32_t block_dim, aclrtStream stream, std::span<const GmArg> args,
                   const std::function<void()>& body);

}  // namespace actgrad::atlas
