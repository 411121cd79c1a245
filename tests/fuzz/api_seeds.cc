// Writes the API fuzz target's seed corpus (tests/fuzz/corpus/api/): valid
// calls of every op and dtype, layouts and launch options, each class of bad
// input, and reproductions of hostile inputs (overflowing strides and spans). Each seed is a
// program (api_program.h) encoded by the same file the target decodes with.
//   build-fuzz/tests/fuzz/actgrad-api-seeds tests/fuzz/corpus/api
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>

#include "api_program.h"

using namespace fuzzapi;

namespace {

constexpr int32_t F32 = 0, F16 = 1, BF16 = 27, I32 = 3, I8 = 2, F64 = 11;
constexpr int64_t k2p32 = int64_t(1) << 32, k2p62 = int64_t(1) << 62;
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TensorSpec T(int32_t dtype, std::vector<int64_t> dims) {
  TensorSpec t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  return t;
}
// A view with explicit strides, offset and storage.
TensorSpec View(int32_t dtype, std::vector<int64_t> dims, std::vector<int64_t> strides, int64_t offset,
                std::vector<int64_t> storage) {
  TensorSpec t = T(dtype, std::move(dims));
  t.stride_mode = Strides::kExplicit;
  t.strides = std::move(strides);
  t.offset = offset;
  t.storage_mode = Storage::kExplicit;
  t.storage = std::move(storage);
  return t;
}
// A null or aliased tensor argument.
TensorSpec Ref(Handle h) {
  TensorSpec t;
  t.handle = h;
  return t;
}
Program P(ApiOp op, TensorSpec a, TensorSpec b, TensorSpec out) {
  Program p;
  p.op = op;
  p.t[0] = std::move(a);
  p.t[1] = std::move(b);
  p.t[2] = std::move(out);
  return p;
}
Program Same(ApiOp op, int32_t dtype, std::vector<int64_t> dims) {
  return P(op, T(dtype, dims), T(dtype, dims), T(dtype, dims));
}
// A call whose operands are gathered (transposed input): phase two needs a workspace.
Program Gathered(ApiOp op = ApiOp::kSelu) {
  return P(op, View(F32, {3, 4}, {1, 3}, 0, {12}), T(F32, {3, 4}), T(F32, {3, 4}));
}
template <class F>
Program With(Program p, F&& edit) {
  edit(p);
  return p;
}

std::vector<std::pair<std::string, Program>> Seeds() {
  std::vector<std::pair<std::string, Program>> s;
  // ---- valid calls: every op and dtype
  for (int32_t t : {F32, F16, BF16, I32, I8}) s.push_back({"selu-" + std::to_string(t), Same(ApiOp::kSelu, t, {2, 3})});
  for (int32_t t : {F32, F16, BF16}) {
    const std::string d = std::to_string(t);
    s.push_back({"hardswish-" + d, Same(ApiOp::kHardswish, t, {4, 4})});
    s.push_back({"gelu-" + d, Same(ApiOp::kGelu, t, {7})});
    s.push_back({"gelu-v2-tanh-" + d, With(Same(ApiOp::kGeluV2, t, {5}), [](Program& p) { p.approximate = 1; })});
    s.push_back({"softshrink-" + d, Same(ApiOp::kSoftshrink, t, {3, 5})});
    s.push_back({"logit-" + d, Same(ApiOp::kLogit, t, {9})});
  }
  s.push_back({"gelu-v2-none", Same(ApiOp::kGeluV2, F32, {5})});
  s.push_back({"gelu-promote-f16-bf16", P(ApiOp::kGelu, T(F16, {4}), T(BF16, {4}), T(F32, {4}))});
  s.push_back({"gelu-promote-f32-f16", P(ApiOp::kGelu, T(F32, {2, 2}), T(F16, {2, 2}), T(F32, {2, 2}))});
  s.push_back({"gelu-broadcast", P(ApiOp::kGelu, T(F32, {2, 3}), T(F32, {3}), T(F32, {2, 3}))});
  s.push_back({"softshrink-broadcast", P(ApiOp::kSoftshrink, T(F16, {3, 1}), T(F16, {1, 4}), T(F16, {3, 4}))});
  s.push_back({"logit-eps-quarter", With(Same(ApiOp::kLogit, F32, {6}), [](Program& p) { p.eps = 0.25; })});
  s.push_back({"logit-eps-nan", With(Same(ApiOp::kLogit, BF16, {6}), [](Program& p) { p.eps = kNaN; })});
  s.push_back({"scalar-0d", Same(ApiOp::kHardswish, F32, {})});
  s.push_back({"eight-dims", Same(ApiOp::kSelu, F32, {1, 2, 1, 2, 1, 2, 1, 2})});
  s.push_back({"large-4096", Same(ApiOp::kGelu, F32, {64, 64})});
  // empty tensors: workspace 0, nothing written
  s.push_back({"empty", Same(ApiOp::kSelu, F32, {0})});
  s.push_back({"empty-3d", Same(ApiOp::kLogit, F16, {3, 0, 2})});
  s.push_back({"empty-broadcast", P(ApiOp::kGelu, T(F32, {0}), T(F32, {1}), T(F32, {0}))});
  s.push_back({"empty-null-data", With(Same(ApiOp::kSelu, F32, {2, 0}), [](Program& p) {
                 for (auto& t : p.t) t.null_data = true;
               })});
  // layouts
  s.push_back({"transposed-input", Gathered()});
  s.push_back({"offset-output", P(ApiOp::kHardswish, T(F32, {4}), T(F32, {4}), View(F32, {4}, {1}, 5, {16}))});
  s.push_back({"negative-stride", P(ApiOp::kSelu, View(F32, {4}, {-1}, 3, {4}), T(F32, {4}), T(F32, {4}))});
  s.push_back({"strided-output-f16", P(ApiOp::kGelu, T(F16, {5}), T(F16, {5}), View(F16, {5}, {2}, 1, {11}))});
  s.push_back({"stride0-input", P(ApiOp::kSoftshrink, View(F32, {3, 4}, {0, 1}, 0, {4}), T(F32, {3, 4}),
                                  T(F32, {3, 4}))});
  s.push_back({"null-strides", With(Same(ApiOp::kSelu, I8, {2, 3, 4}), [](Program& p) {
                 for (auto& t : p.t) t.stride_mode = Strides::kNull;
               })});
  s.push_back({"two-dim-storage", P(ApiOp::kSelu, View(I32, {2, 3}, {3, 1}, 0, {2, 3}), T(I32, {2, 3}),
                                    T(I32, {2, 3}))});
  s.push_back({"in-place", P(ApiOp::kHardswish, T(BF16, {8}), T(BF16, {8}), Ref(Handle::kSameAs0))});
  s.push_back({"in-place-other-view", With(P(ApiOp::kSelu, T(F32, {4}), T(F32, {4}), View(F32, {4}, {1}, 0, {4})),
                                           [](Program& p) { p.t[2].handle = Handle::kOnBuffer0; })});
  s.push_back({"format-nchw", With(Same(ApiOp::kSelu, F32, {1, 2, 2, 2}), [](Program& p) {
                 for (auto& t : p.t) t.format = 0;
               })});
  // launch options
  s.push_back({"stream", With(Gathered(), [](Program& p) { p.stream = StreamMode::kCreated; })});
  s.push_back({"stream-destroyed", With(Gathered(), [](Program& p) { p.stream = StreamMode::kDestroyed; })});
  s.push_back({"ws-larger", With(Gathered(), [](Program& p) { p.ws = WsMode::kLarger; })});
  s.push_back({"ws-short", With(Gathered(), [](Program& p) { p.ws = WsMode::kShort; })});
  s.push_back({"ws-null", With(Gathered(), [](Program& p) { p.ws = WsMode::kNull; })});
  s.push_back({"repeatable-twice", With(Gathered(ApiOp::kLogit), [](Program& p) { p.runs = Runs::kRepeatableTwice; })});
  s.push_back({"spent-executor", With(Same(ApiOp::kGelu, F32, {3}), [](Program& p) { p.runs = Runs::kOnceThenSpent; })});
  s.push_back({"destroy-unrun", With(Gathered(), [](Program& p) { p.runs = Runs::kDestroyUnrun; })});

  // ---- bad input: each rule
  for (int i = 0; i < 3; ++i)
    s.push_back({"null-tensor-" + std::to_string(i),
                 With(Same(ApiOp::kSelu, F32, {2}), [i](Program& p) { p.t[i] = Ref(Handle::kNull); })});
  s.push_back({"null-ws-size", With(Same(ApiOp::kSelu, F32, {2}), [](Program& p) { p.null_ws_size = true; })});
  s.push_back({"null-executor", With(Same(ApiOp::kSelu, F32, {2}), [](Program& p) { p.null_executor = true; })});
  s.push_back({"null-data", With(Same(ApiOp::kSelu, F32, {2}), [](Program& p) { p.t[1].null_data = true; })});
  s.push_back({"null-dims-array", With(Same(ApiOp::kSelu, F32, {2}), [](Program& p) { p.t[0].null_dims = true; })});
  s.push_back({"null-storage-array", With(Same(ApiOp::kSelu, F32, {2}), [](Program& p) {
                 p.t[2].storage_mode = Storage::kNull;
                 p.t[2].storage = {2};
               })});
  s.push_back({"nine-dims", Same(ApiOp::kSelu, F32, {1, 1, 1, 1, 1, 1, 1, 1, 1})});
  s.push_back({"sixty-dims", Same(ApiOp::kSelu, F32, std::vector<int64_t>(60, 1))});
  s.push_back({"negative-dim", P(ApiOp::kHardswish, T(F32, {2, -1}), T(F32, {2, -1}), T(F32, {2, -1}))});
  s.push_back({"view-past-storage", P(ApiOp::kSelu, View(F32, {4}, {1}, 2, {5}), T(F32, {4}), T(F32, {4}))});
  s.push_back({"negative-offset", P(ApiOp::kSelu, T(F32, {4}), T(F32, {4}), View(F32, {4}, {1}, -1, {8}))});
  s.push_back({"negative-stride-before-storage", P(ApiOp::kSelu, View(F32, {2}, {-1}, 0, {2}), T(F32, {2}),
                                                   T(F32, {2}))});
  s.push_back({"dtype-f64", Same(ApiOp::kHardswish, F64, {2})});
  s.push_back({"dtype-i32-not-selu", Same(ApiOp::kGelu, I32, {2})});
  s.push_back({"dtype-mismatch", P(ApiOp::kSelu, T(F32, {2}), T(F16, {2}), T(F32, {2}))});
  s.push_back({"gelu-not-promoted", P(ApiOp::kGelu, T(F16, {2}), T(BF16, {2}), T(F16, {2}))});
  s.push_back({"shape-mismatch", P(ApiOp::kSelu, T(F32, {2, 3}), T(F32, {3, 2}), T(F32, {2, 3}))});
  s.push_back({"no-broadcast", P(ApiOp::kGelu, T(F32, {3}), T(F32, {4}), T(F32, {3}))});
  s.push_back({"wrong-broadcast-out", P(ApiOp::kSoftshrink, T(F32, {2, 1}), T(F32, {3}), T(F32, {2, 1}))});
  s.push_back({"output-stride0", P(ApiOp::kSelu, T(F32, {3}), T(F32, {3}), View(F32, {3}, {0}, 0, {1}))});
  s.push_back({"output-overlaps", P(ApiOp::kSelu, T(F32, {2, 2}), T(F32, {2, 2}), View(F32, {2, 2}, {1, 1}, 0, {3}))});
  s.push_back({"approximate-null", With(Same(ApiOp::kGeluV2, F32, {2}), [](Program& p) { p.approximate = 2; })});
  s.push_back({"approximate-sigmoid", With(Same(ApiOp::kGeluV2, F32, {2}), [](Program& p) { p.approximate = 3; })});
  s.push_back({"lambd-negative", With(Same(ApiOp::kSoftshrink, F32, {2}), [](Program& p) { p.lambd = -0.5; })});
  s.push_back({"lambd-nan", With(Same(ApiOp::kSoftshrink, F32, {2}), [](Program& p) { p.lambd = kNaN; })});
  s.push_back({"lambd-null", With(Same(ApiOp::kSoftshrink, F32, {2}), [](Program& p) { p.null_lambd = true; })});
  s.push_back({"lambd-double", With(Same(ApiOp::kSoftshrink, F32, {2}), [](Program& p) { p.lambd_dtype = F64; })});

  // ---- hostile views (each must be refused in phase one with 161002)
  s.push_back({"defect-f16-input-stride-2p62",
               P(ApiOp::kSelu, View(F16, {5}, {k2p62}, 0, {1}), T(F16, {5}), T(F16, {5}))});
  s.push_back({"defect-f16-output-stride-2p62",
               P(ApiOp::kSelu, T(F16, {5}), T(F16, {5}), View(F16, {5}, {k2p62}, 0, {1}))});
  s.push_back({"defect-f32-output-stride-2p62",
               P(ApiOp::kHardswish, T(F32, {5}), T(F32, {5}), View(F32, {5}, {k2p62}, 0, {1}))});
  s.push_back({"defect-dims-2p32-squared-storage-1", [] {
                 Program p = Same(ApiOp::kSelu, F32, {k2p32, k2p32});
                 for (auto& t : p.t) t = View(F32, {k2p32, k2p32}, {k2p32, 1}, 0, {1});
                 return p;
               }()});
  s.push_back({"defect-contiguous-2p62-storage-max", [] {
                 Program p = Same(ApiOp::kSelu, F32, {k2p62 + 1, k2p62});
                 for (auto& t : p.t) {
                   t.stride_mode = Strides::kNull;  // the library computes contiguous strides
                   t.storage_mode = Storage::kExplicit;
                   t.storage = {kI64Max};
                 }
                 return p;
               }()});
  // found by this target: offset + span past INT64_MAX wrapped and passed the storage check;
  // storage dims whose product is past INT64_MAX
  s.push_back({"defect-offset-int64-max", P(ApiOp::kGelu, T(BF16, {7}), View(BF16, {7}, {1}, kI64Max, {kI64Max}),
                                            T(BF16, {7}))});
  s.push_back({"defect-storage-product-past-int64", P(ApiOp::kSelu, View(F32, {2}, {1}, 0, {k2p32, k2p32}),
                                                      T(F32, {2}), T(F32, {2}))});
  s.push_back({"defect-dtype-1000", With(Same(ApiOp::kSelu, F32, {2}), [](Program& p) { p.t[0].dtype = 1000; })});
  s.push_back({"defect-dtype-negative", With(Same(ApiOp::kGelu, F32, {2}), [](Program& p) { p.t[2].dtype = -100; })});
  s.push_back({"defect-dtype-31", With(Same(ApiOp::kLogit, F32, {2}), [](Program& p) { p.t[1].dtype = 31; })});
  s.push_back({"defect-format-1000", With(Same(ApiOp::kSelu, F32, {2}), [](Program& p) { p.t[1].format = 1000; })});
  s.push_back({"defect-format-negative", With(Same(ApiOp::kHardswish, F32, {2}), [](Program& p) {
                 p.t[2].format = -7;
               })});
  s.push_back({"defect-scalar-dtype-1000", With(Same(ApiOp::kSoftshrink, F32, {2}), [](Program& p) {
                 p.lambd_dtype = 1000;
               })});
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus directory>\n", argv[0]);
    return 2;
  }
  for (const auto& [name, program] : Seeds()) {
    const std::vector<uint8_t> bytes = Encode(program);
    // The target must read back the same program.
    const std::string a = Describe(program), b = Describe(Decode(bytes.data(), bytes.size()));
    if (a != b) {
      std::fprintf(stderr, "seed %s does not round-trip:\n%s\n%s\n", name.c_str(), a.c_str(), b.c_str());
      return 1;
    }
    std::ofstream(std::string(argv[1]) + "/" + name, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  return 0;
}
