// Phase one builds a Plan (validated shapes, dims ordered and coalesced,
// the path and the chosen kernel: plan.cc); phase two executes it
// (execute.cc): contiguous operands go straight to the variant, views as
// tiles of runs in place, short runs and promotions through per-thread buffers.
#pragma once
#include <cstdint>

#include "actgrad/acl_dtype.h"
#include "actgrad/types.h"
#include "tiling/choice.h"
#include "variants/variant.h"

struct aclTensor;

namespace actgrad::rt {

inline constexpr int kMaxDims = 8;
inline constexpr size_t kBufferElems = 4096;  // gather/scatter buffer per operand and thread (PlanPath::kBuffered)
// PlanPath::kRuns: runs shorter than a cache line go the kBuffered way (a
// kernel call per short run costs more than copying it); at most
// kMaxTileRows runs per kernel call.
inline constexpr size_t kMinRunBytes = kCacheLineBytes;
inline constexpr int64_t kMaxTileRows = 1024;
inline constexpr int64_t kMaxTileElems = int64_t(1) << 18;  // a packed tile, per input
// The gathered tile of a transposed input when the table's split has none:
// 1024 out rows (whole 4 KB rows of an f32 input: its tile is one
// contiguous stretch, read at the speed of a contiguous read) x 256 bytes of
// each out row (streaming stores of 256-byte pieces 64 KB apart run at the
// contiguous write speed; 64-byte pieces at a third of it). SELU f32 16M,
// one thread (actgrad-transpose-probe, copy + kernel): 1024 x 64 takes
// 0.85x the time of 256 x 256; the tuner tries others of the same kind
// (tools/tune/cpu_backend.cc).
inline constexpr int64_t kGatheredTileRows = 1024, kGatheredTileOutBytes = 256;
// The packed tile of a splat g when the table's split has none: 256 x 256.
inline constexpr int64_t kDefaultTileRows = 256, kDefaultTileCols = 256;

// How phase two walks a plan (docs/architecture.md, "Views"):
//  kFlat   every operand contiguous: the variant on the whole range;
//  kRuns   out contiguous along the (coalesced, reordered) innermost dim, runs
//          of at least kMinRunBytes: the variant on tiles of runs in place;
//          an input with inner stride 0 is a splat per run, one with another
//          inner stride (a transposed view) is copied tile by tile;
//  kBuffered anything else (short runs, dtype promotion): buffers of
//          kBufferElems gathered, computed and scattered.
enum class PlanPath : uint8_t { kFlat, kRuns, kBuffered };

// PlanPath::kRuns: each operand's byte offset of the rows (dims 0..ndim-2)
// of one block of the lowest row dims, up to kBlockRows rows, and the dims
// above the block, which RowWalker steps through like an odometer
// (runtime/row_walker.h defines Build). Built in phase one: at
// 64K, building it in every phase two (256 rows x 3 operands, before the
// threads start) cost SELU f32 on the strided view about 1.7 of 13 us per
// call on two threads (perf's share).
inline constexpr int64_t kBlockRows = 256;
struct Plan;
struct RowTable {
  void Build(const Plan& p);  // from p's row dims (BuildPlan, for PlanPath::kRuns)
  int64_t block = 1;  // rows per block: the product of dims lo..nd-1
  int lo = 0;         // the block's first dim; dims 0..lo-1 are the odometer's
  int nd = 0;         // the row dims (the plan's dims 0..ndim-2, the longest split)
  // Row dims: at most kMaxDims - 1, plus one per split (two at most).
  int64_t shape[kMaxDims + 1] = {};
  int64_t step[3][kMaxDims + 1] = {};  // byte stride of each dim, per operand (g, x, out)
  int64_t off[3][kBlockRows];          // byte offset of each block row (rows < block set)
};

// Fixed-size storage (no heap): a plan holds at most kMaxDims dims, as every
// tensor the ops accept does (CheckTensor), so building and dropping one
// allocates nothing.
struct OperandView {
  char* base = nullptr;  // data + offset * element size
  DType dtype = DType::kF32;
  bool flat = false;             // contiguous over the whole plan in the compute dtype
  bool gathered = false;         // kRuns: copied tile by tile (inner stride neither 0 nor 1)
  int64_t strides[kMaxDims] = {};  // in elements, one per plan dim (0 = broadcast); plan.ndim of them
};

struct Plan {
  Op op = Op::kSeluBwd;
  OpParams params;
  DType dtype = DType::kF32;   // compute and output dtype
  int ndim = 0;                // dims of shape (coalesced; at least one once built)
  int64_t shape[kMaxDims] = {};  // coalesced output shape
  uint64_t numel = 0;
  OperandView g, x, out;
  KernelChoice kernel;         // the variant and its Split (ChooseKernel)
  uint64_t workspace = 0;      // bytes phase two needs (gather buffers)
  bool broadcast = false;
  // kRuns: every input that is not a splat steps forward through memory as
  // the runs go (its strides, zeros aside, decrease along the dims): the
  // hardware prefetchers follow it, so the kernels prefetch no runs.
  bool inputs_in_order = false;
  PlanPath path = PlanPath::kFlat;
  // kRuns: the tile one kernel call computes: up to tile_rows runs (along
  // dim ndim-2) of up to tile_cols elements (along dim ndim-1); thread_bytes:
  // each thread's share of the workspace.
  int64_t tile_rows = 1, tile_cols = 1;
  uint64_t thread_bytes = 0;
  // kRuns with a gathered input or a splat g (the kernels take splats of x
  // only: variant.h Runs): every input is packed into a per-thread
  // tile (the gathered one by CopyTile, a splat one filled with its runs'
  // values, any other copied by PackRows unless its rows in the tile are
  // adjacent already, as a flat input's whole rows are), so that a tile
  // whose out rows are adjacent is one contiguous kernel call. (Packing the
  // runs of an inner-run view too was slower: 64-element SELU f32 runs at
  // 64K took 19.7 us packed, 14.0 us in place, 8.6 us contiguous; so was
  // expanding a row broadcast's splat input into tiles for contiguous calls:
  // Softshrink f32 [1024, 64] against [1024, 1], 18.5-23.4 us expanded,
  // 10.5-12.5 us as splat runs.)
  bool packed = false;
  // kRuns, Split::transpose_result, g and x both gathered with stride 1
  // along out's rows (a transposed view's inputs, read along their own
  // rows): each tile is computed in the inputs' order into a per-thread
  // scratch tile (scratch_ld elements a row: tile_rows plus a cache line, so
  // that the tile_cols rows CopyTileTo reads at once are not a power of two
  // apart, which would put them into a few L1 sets) and transposed into out
  // by CopyTileTo, with plain stores. One transpose instead of two: within
  // the L2 1.4-1.9x faster than copying both inputs, beyond it slower (out's
  // scattered plain stores); the tuner chooses it per cell.
  bool transpose_result = false;
  int64_t scratch_ld = 0;
  RowTable rows;  // kRuns only
};

// Validation of one tensor for an op (its dtype already checked; esize is its
// element size): dims 0..8, no negative dim, an aclFormat, a view that fits
// its storage, a non-null buffer when non-empty. Every size derived from the
// view (numel, storage, spans, offsets and byte offsets, and the farthest
// element phase two's walk steps to) must fit in int64, else 161002: once a
// tensor passes, phase two's offset arithmetic cannot overflow. Returns a status.
// report = false: the verdict only, no message (aclCreateTensor caches it:
// aclTensor::checked_esize).
int CheckTensor(const char* op, const char* name, const aclTensor* t, size_t esize, bool report = true);
// Output views must not overlap themselves (a stride-0 or interleaved view).
int CheckNoSelfOverlap(const char* op, const char* name, const aclTensor* out, bool report = true);
// NumPy broadcast of two shapes (each at most kMaxDims dims: CheckTensor)
// into out[0..*ndim); returns a status.
int BroadcastShapes(const char* op, const aclTensor* a, const aclTensor* b, int64_t out[kMaxDims], size_t* ndim);

// Fills plan.shape/operands from out's shape and the two inputs (each
// broadcast to it, all three passed CheckTensor), coalesces dims and picks
// the kernel. names: g, x, out for messages. Returns a status. Every field
// the plan's use reads is written (a pooled executor's plan is reused).
// same_dims: g, x and out have the same dims (phase one compared them), and
// their dtypes are the plan's: the contiguous case may apply.
int BuildPlan(const char* op, const char* const names[3], Plan* plan, const aclTensor* g, const aclTensor* x,
              const aclTensor* out, bool same_dims_and_dtype);

// Runs the plan; workspace holds plan.workspace bytes (runtime/execute.cc).
void Execute(const Plan& plan, void* workspace);

// b rounded up to whole cache lines (the workspace's parts).
inline uint64_t Align64(uint64_t b) { return (b + kCacheLineBytes - 1) / kCacheLineBytes * kCacheLineBytes; }

}  // namespace actgrad::rt
