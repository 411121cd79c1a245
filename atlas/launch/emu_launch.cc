#include "emu_launch.h"

#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "acl/acl_rt.h"
#include "atlas_tiling_data.h"
#include "emu_runtime.h"
#include "runtime/acl_objects.h"
#include "runtime/error.h"
#include "runtime/stream.h"

namespace actgrad::atlas {
namespace {

// A fault of the kernel: deferred to the stream's next synchronize, as on a
// device (the default stream has no deferred error here: returned at once).
uint32_t Fault(const char* kernel, aclrtStream stream, const std::string& what) {
  const std::string msg = std::string("aclrtlaunch_") + kernel + ": AI core exception (emulator): " + what;
  if (stream) {
    rt::RecordStreamError(stream, ACL_ERROR_RT_AICORE_EXCEPTION, msg);
    return ACL_SUCCESS;
  }
  return uint32_t(rt::Fail(ACL_ERROR_RT_AICORE_EXCEPTION, "%s", msg.c_str()));
}

// The GM regions of a launch of one of our kernels, from its tiling data
// (device memory is host memory here, so the wrapper can read it). With a
// tiling without the magic only the tiling is registered: the kernel traps on
// it before touching anything else. "" or what would fault before the kernel runs.
std::string Regions(std::span<const GmArg> args, std::vector<AscendEmu::GmRegion>* out) {
  const GmArg* tiling = nullptr;
  for (const GmArg& a : args)
    if (std::string_view(a.name) == "tiling") tiling = &a;
  if (!tiling) return "the kernel has no 'tiling' argument (the emulator sizes GM from the tiling data)";
  if (!tiling->address) return "the GM address of 'tiling' is null";
  AtlasTilingData t;
  std::memcpy(&t, tiling->address, sizeof t);
  out->push_back({tiling->address, sizeof t, "tiling"});
  if (t.magic != kTilingMagic) return "";
  const uint64_t esize = DTypeBytes(t.dtype);
  if (t.totalLength > (uint64_t(1) << 48) / esize)
    return "the tiling's totalLength " + std::to_string(t.totalLength) + " is no buffer size";
  const uint64_t bytes = t.totalLength * esize;
  for (const GmArg& a : args) {
    const std::string_view name(a.name);
    if (&a == tiling || name == "workspace" || bytes == 0) continue;  // our kernels use no workspace
    if (!a.address) return "the GM address of '" + std::string(name) + "' is null";
    out->push_back({a.address, bytes, std::string(name)});
  }
  return "";
}

}  // namespace

uint32_t EmuLaunch(const char* kernel, uint32_t block_dim, aclrtStream stream, std::span<const GmArg> args,
                   const std::function<void()>& body) {
  const std::string name = std::string("aclrtlaunch_") + kernel;
  rt::Context* context;
  if (const int e = rt::CheckTaskStream(name.c_str(), stream, &context)) return uint32_t(e);
  if (block_dim == 0 || block_dim > kMaxLaunchBlockDim)
    return uint32_t(rt::Fail(ACL_ERROR_RT_PARAM_INVALID, "%s: blockDim %u is outside [1, %u]", name.c_str(), block_dim,
                             kMaxLaunchBlockDim));
  AscendEmu::LaunchOptions o;
  if (const std::string why = Regions(args, &o.gm); !why.empty()) return Fault(kernel, stream, why);
  try {
    AscendEmu::Launch(kernel, block_dim, o, body);
  } catch (const std::exception& e) {
    return Fault(kernel, stream, e.what());
  }
  return ACL_SUCCESS;
}

}  // namespace actgrad::atlas
