// The "atlas-device" tuner backend in a build without CANN: the atlas-model
// candidates, timed with ACL events around launches of the kernels on the
// emulator, labelled as emulator times.
#include <gtest/gtest.h>

#include <string>

#include "acl/acl.h"
#include "atlas_backend.h"
#include "tools/tune/backend.h"

namespace {

using namespace actgrad;
using namespace actgrad::atlas;

const std::string kSoc = std::string(ACTGRAD_ATLAS_SOC_DIR) + "/ascend910b.json";

TEST(AtlasDeviceBackend, IsTheEmulatorHereWithTheModelsCandidates) {
  auto device = MakeAtlasDeviceBackend(kSoc, 0);
  auto model = MakeAtlasModelBackend(kSoc);
  EXPECT_EQ(device->Name(), "atlas-device(emulator)");
  EXPECT_FALSE(device->Deterministic());
  EXPECT_EQ(device->MachineId(), model->MachineId());
  for (Op op : {Op::kSeluBwd, Op::kLogitGrad}) {
    const tune::Cell cell{op, DType::kF16, "contig", 14, 16384};
    const auto a = device->Candidates(cell), b = model->Candidates(cell);
    ASSERT_FALSE(a.empty());
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]);
    EXPECT_EQ(device->Default(cell), model->Default(cell));
  }
  const nlohmann::json p = device->Provenance();
  EXPECT_EQ(p.at("timing"), "emulator");
  EXPECT_EQ(p.at("device"), 0);
  EXPECT_FALSE(p.contains("model"));
  EXPECT_NE(p.at("note").get<std::string>().find("not a table to compile in"), std::string::npos);
}

// Every op measures (each run checks its output against the reference
// first): positive times, the number of samples asked for.
TEST(AtlasDeviceBackend, MeasuresEveryOp) {
  auto device = MakeAtlasDeviceBackend(kSoc, 0);
  for (Op op : {Op::kSeluBwd, Op::kHardswishBwd, Op::kGeluBwd, Op::kSoftshrinkBwd, Op::kLogitGrad}) {
    SCOPED_TRACE(std::string(OpName(op)));
    const tune::Cell cell{op, DType::kF32, "contig", 12, 5000};
    device->Prepare(cell);
    const Choice c = device->Candidates(cell).front();
    const auto ns = device->Measure(cell, c, 3, 1e-4);
    ASSERT_EQ(ns.size(), 3u);
    for (double t : ns) EXPECT_GT(t, 0.0);
  }
}

TEST(AtlasDeviceBackend, ABadCandidateOrDeviceIsAClearError) {
  auto device = MakeAtlasDeviceBackend(kSoc, 0);
  const tune::Cell cell{Op::kGeluBwd, DType::kF16, "contig", 12, 4096};
  Choice c = device->Candidates(cell).front();
  c.variant = "selu_bwd.f16.atlas.upcast_f32.exact.db2";
  try {
    device->Measure(cell, c, 1, 1e-4);
    ADD_FAILURE() << "a variant of another op was measured";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("does not match the cell"), std::string::npos) << e.what();
  }
  device.reset();
  try {
    MakeAtlasDeviceBackend(kSoc, 1);
    ADD_FAILURE() << "device 1 opened";
  } catch (const std::runtime_error& e) {
    // the call, ACL's code and ACL's own message
    EXPECT_NE(std::string(e.what()).find("atlas-device: aclrtSetDevice(1) failed: error 107001 ("), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("device 1 does not exist"), std::string::npos) << e.what();
  }
  // the failed construction released what it took (aclInit too), and a backend opens again
  EXPECT_EQ(aclInit(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_NO_THROW(MakeAtlasDeviceBackend(kSoc, 0));
}

}  // namespace
