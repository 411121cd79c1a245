#include "runtime/plan.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>

#include "actgrad/half.h"
#include "aclnn/aclnn_base.h"
#include "runtime/error.h"
#include "runtime/objects.h"
#include "tiling/dispatch.h"
#include "variants/thread_pool.h"

namespace actgrad::rt {

namespace {
uint64_t AbsU(int64_t v) { return v < 0 ? 0 - uint64_t(v) : uint64_t(v); }
}  // namespace

int CheckTensor(const char* op, const char* name, const aclTensor* t, size_t esize) {
  if (t->dims.size() > size_t(kMaxDims))
    return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s has %zu dims, at most %d are supported", op, name, t->dims.size(),
                kMaxDims);
  if (!IsAclFormat(t->format))
    return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s has format %d, which is no aclFormat", op, name, int(t->format));
  if (t->strides_overflow)
    return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s has no strides and its contiguous strides overflow int64", op, name);
  bool empty = false;
  for (size_t i = 0; i < t->dims.size(); ++i) {
    if (t->dims[i] < 0) return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s has negative dim %zu (%lld)", op, name, i, (long long)t->dims[i]);
    empty |= t->dims[i] == 0;
  }
  if (empty) return ACLNN_SUCCESS;  // never touched
  int64_t numel = 1;
  for (int64_t d : t->dims)
    if (__builtin_mul_overflow(numel, d, &numel))
      return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s has more than 2^63-1 elements", op, name);
  if (t->offset < 0) return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s has negative offset %lld", op, name, (long long)t->offset);
  int64_t storage = 1;
  for (int64_t d : t->storage_dims) {
    if (d < 0) return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s has a negative storage dim", op, name);
    if (__builtin_mul_overflow(storage, d, &storage))
      return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s has a storage of more than 2^63-1 elements", op, name);
  }
  // lo..hi: the elements the view covers; their byte offsets must fit too.
  // (Phase two's walk never steps past an element of the view: ForEachRun.)
  int64_t lo = t->offset, hi = t->offset;
  for (size_t i = 0; i < t->dims.size(); ++i) {
    int64_t span;
    if (__builtin_mul_overflow(t->dims[i] - 1, t->strides[i], &span) ||
        __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi))
      return Fail(ACLNN_ERR_PARAM_INVALID,
                  "%s: %s view overflows int64 (dim %zu: size %lld, stride %lld; offset %lld)", op, name, i,
                  (long long)t->dims[i], (long long)t->strides[i], (long long)t->offset);
  }
  if (lo < 0 || hi >= storage)
    return Fail(ACLNN_ERR_PARAM_INVALID,
                "%s: %s view (offset %lld, elements %lld..%lld) does not fit its storage of %lld elements", op, name,
                (long long)t->offset, (long long)lo, (long long)hi, (long long)storage);
  int64_t end_byte;
  if (__builtin_mul_overflow(hi + 1, int64_t(esize), &end_byte))  // hi < storage: hi + 1 fits
    return Fail(ACLNN_ERR_PARAM_INVALID,
                "%s: %s view reaches element %lld, whose byte offset (element size %zu) overflows int64", op, name,
                (long long)hi, esize);
  if (!t->data) return Fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s has no data (null tensorData)", op, name);
  return ACLNN_SUCCESS;
}

int CheckNoSelfOverlap(const char* op, const char* name, const aclTensor* out) {
  for (int64_t d : out->dims)
    if (d == 0) return ACLNN_SUCCESS;  // an empty view writes nothing
  std::vector<std::pair<uint64_t, uint64_t>> dims;  // (|stride|, size)
  for (size_t i = 0; i < out->dims.size(); ++i)
    if (out->dims[i] > 1) dims.emplace_back(AbsU(out->strides[i]), uint64_t(out->dims[i]));
  std::sort(dims.begin(), dims.end());
  uint64_t extent = 1;  // elements spanned by the dims so far
  for (auto [stride, size] : dims) {
    if (stride < extent)
      return Fail(ACLNN_ERR_PARAM_INVALID, "%s: the %s view overlaps itself (stride %llu)", op, name,
                  (unsigned long long)stride);
    if (__builtin_mul_overflow(stride, size - 1, &stride) || __builtin_add_overflow(extent, stride, &extent))
      return Fail(ACLNN_ERR_PARAM_INVALID, "%s: the %s view's extent overflows", op, name);
  }
  return ACLNN_SUCCESS;
}

int BroadcastShapes(const char* op, const aclTensor* a, const aclTensor* b, std::vector<int64_t>* out) {
  const size_t n = std::max(a->dims.size(), b->dims.size());
  out->assign(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a->dims.size() ? 1 : a->dims[i - (n - a->dims.size())];
    const int64_t db = i < n - b->dims.size() ? 1 : b->dims[i - (n - b->dims.size())];
    if (da != db && da != 1 && db != 1)
      return Fail(ACLNN_ERR_PARAM_INVALID, "%s: shapes do not broadcast (dim %zu: %lld vs %lld)", op, i,
                  (long long)da, (long long)db);
    (*out)[i] = da == 1 ? db : da;
  }
  return ACLNN_SUCCESS;
}

namespace {

// Strides of t seen as a tensor of shape `shape` (right-aligned broadcast).
std::vector<int64_t> BroadcastStrides(const aclTensor* t, const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 0);
  const size_t lead = shape.size() - t->dims.size();
  for (size_t i = 0; i < t->dims.size(); ++i)
    s[lead + i] = (t->dims[i] == 1 && shape[lead + i] != 1) ? 0 : t->strides[i];
  return s;
}

// The operand's base pointer is data + offset * element size (fits: CheckTensor).
int MakeOperand(const char* op, const char* name, const aclTensor* t, const std::vector<int64_t>& shape,
                OperandView* v) {
  FromAclDataType(t->dtype, &v->dtype);
  int64_t byte_offset;
  if (__builtin_mul_overflow(t->offset, int64_t(DTypeSize(v->dtype)), &byte_offset))
    return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s offset %lld in bytes overflows int64", op, name, (long long)t->offset);
  v->base = static_cast<char*>(t->data) + byte_offset;
  v->strides = BroadcastStrides(t, shape);
  return ACLNN_SUCCESS;
}

// An empty output: nothing runs, nothing of the views is looked at.
void EmptyPlan(Plan* plan, const aclTensor* const t[3]) {
  plan->shape = {0};
  OperandView* ops[3] = {&plan->g, &plan->x, &plan->out};
  for (int k = 0; k < 3; ++k) {
    FromAclDataType(t[k]->dtype, &ops[k]->dtype);
    ops[k]->base = static_cast<char*>(t[k]->data);
    ops[k]->strides = {1};
    ops[k]->flat = ops[k]->dtype == plan->dtype;
  }
}

}  // namespace

int BuildPlan(const char* op, const char* const names[3], Plan* plan, const aclTensor* g, const aclTensor* x,
              const aclTensor* out) {
  const aclTensor* const t[3] = {g, x, out};
  const std::vector<int64_t>& shape = out->dims;
  plan->numel = 1;
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
    plan->numel = 0;
    EmptyPlan(plan, t);
  } else {
    for (int64_t d : shape)  // fits: out passed CheckTensor
      if (__builtin_mul_overflow(plan->numel, uint64_t(d), &plan->numel))
        return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s has too many elements", op, names[2]);
    OperandView ops[3];
    for (int k = 0; k < 3; ++k)
      if (const int st = MakeOperand(op, names[k], t[k], shape, &ops[k])) return st;
    for (auto& o : ops)
      for (int64_t s : o.strides) plan->broadcast |= (s == 0);

    // Coalesce: drop size-1 dims, merge a dim into the next when every operand
    // walks them as one (a stride * size that overflows merges nothing).
    std::vector<int64_t> cs;
    std::vector<std::vector<int64_t>> cst(3);
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 1) continue;
      bool merge = !cs.empty();
      for (int k = 0; k < 3 && merge; ++k) {
        int64_t outer;
        merge = !__builtin_mul_overflow(ops[k].strides[i], shape[i], &outer) && cst[k].back() == outer;
      }
      if (merge) {
        cs.back() *= shape[i];  // at most numel
        for (int k = 0; k < 3; ++k) cst[k].back() = ops[k].strides[i];
      } else {
        cs.push_back(shape[i]);
        for (int k = 0; k < 3; ++k) cst[k].push_back(ops[k].strides[i]);
      }
    }
    if (cs.empty()) {
      cs.push_back(1);
      for (int k = 0; k < 3; ++k) cst[k].push_back(1);
    }
    plan->shape = cs;
    for (int k = 0; k < 3; ++k) {
      ops[k].strides = cst[k];
      bool flat = ops[k].dtype == plan->dtype;
      int64_t expect = 1;
      for (size_t i = cs.size(); i-- > 0 && flat;) {
        flat = cs[i] == 1 || ops[k].strides[i] == expect;
        expect *= cs[i];  // a product of dims, at most numel
      }
      ops[k].flat = flat;
    }
    plan->g = ops[0];
    plan->x = ops[1];
    plan->out = ops[2];
  }

  const bool fast = plan->g.flat && plan->x.flat && plan->out.flat;
  plan->kernel = ChooseKernel(plan->op, plan->dtype, plan->params.gelu_approx, plan->numel, !fast);
  // Gather buffers: one block per operand per thread (none when nothing runs).
  plan->workspace = 0;
  if (!fast && plan->numel > 0 &&
      __builtin_mul_overflow(uint64_t(std::max(1, plan->kernel.split.threads)), 3 * kBlockElems * DTypeSize(plan->dtype),
                             &plan->workspace))
    return Fail(ACLNN_ERR_PARAM_INVALID, "%s: the workspace size overflows", op);
  return ACLNN_SUCCESS;
}

namespace {

float LoadAsFloat(const char* p, DType t) {
  switch (t) {
    case DType::kF32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::kF16: { uint16_t h; std::memcpy(&h, p, 2); return HalfToFloat(h); }
    case DType::kBF16: { uint16_t h; std::memcpy(&h, p, 2); return BF16ToFloat(h); }
    default: return 0.0f;
  }
}

void StoreFloat(char* p, DType t, float f) {
  switch (t) {
    case DType::kF32: std::memcpy(p, &f, 4); break;
    case DType::kF16: { const uint16_t h = FloatToHalf(f); std::memcpy(p, &h, 2); break; }
    case DType::kBF16: { const uint16_t h = FloatToBF16(f); std::memcpy(p, &h, 2); break; }
    default: break;
  }
}

template <size_t kSize>
void StridedCopy(char* dst, int64_t dst_stride, const char* src, int64_t src_stride, int64_t n) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * dst_stride * int64_t(kSize), src + i * src_stride * int64_t(kSize), kSize);
}

// Walks the elements [start, start+len) of the plan's index space in runs
// along the innermost dim, calling fn(element offset of v, run start, run length).
// The running offset only ever points at elements of the view (never one
// stride past a dim's end), so it stays within what CheckTensor validated.
template <class Fn>
void ForEachRun(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides, uint64_t start, uint64_t len,
                Fn&& fn) {
  const size_t nd = shape.size(), in = nd - 1;
  int64_t idx[kMaxDims + 1];
  uint64_t rest = start;
  int64_t off = 0;
  for (size_t i = nd; i-- > 0;) {
    idx[i] = int64_t(rest % uint64_t(shape[i]));
    rest /= uint64_t(shape[i]);
    off += idx[i] * strides[i];
  }
  uint64_t done = 0;
  while (true) {
    const int64_t run = std::min<int64_t>(shape[in] - idx[in], int64_t(len - done));
    fn(off, done, run);
    done += uint64_t(run);
    if (done == len) return;
    // Only the range's last run ends inside a row: back to this row's start, carry.
    off -= idx[in] * strides[in];
    idx[in] = 0;
    for (size_t i = in; i-- > 0;) {
      if (idx[i] + 1 < shape[i]) {
        ++idx[i];
        off += strides[i];
        break;
      }
      off -= idx[i] * strides[i];
      idx[i] = 0;
    }
  }
}

// Copies operand elements [start, start+len) into dst (compute dtype `to`).
void Gather(const Plan& p, const OperandView& v, uint64_t start, uint64_t len, char* dst) {
  const size_t in_size = DTypeSize(v.dtype), out_size = DTypeSize(p.dtype);
  const int64_t inner = v.strides.back();
  ForEachRun(p.shape, v.strides, start, len, [&](int64_t off, uint64_t at, int64_t run) {
    const char* src = v.base + off * int64_t(in_size);
    char* d = dst + at * out_size;
    if (v.dtype == p.dtype) {
      if (inner == 1) std::memcpy(d, src, size_t(run) * in_size);
      else if (in_size == 4) StridedCopy<4>(d, 1, src, inner, run);
      else if (in_size == 2) StridedCopy<2>(d, 1, src, inner, run);
      else StridedCopy<1>(d, 1, src, inner, run);
    } else {  // GELU's dtype promotion
      for (int64_t i = 0; i < run; ++i)
        StoreFloat(d + i * int64_t(out_size), p.dtype, LoadAsFloat(src + i * inner * int64_t(in_size), v.dtype));
    }
  });
}

void Scatter(const Plan& p, const char* src, uint64_t start, uint64_t len) {
  const OperandView& v = p.out;
  const size_t size = DTypeSize(p.dtype);
  const int64_t inner = v.strides.back();
  ForEachRun(p.shape, v.strides, start, len, [&](int64_t off, uint64_t at, int64_t run) {
    char* d = v.base + off * int64_t(size);
    const char* s = src + at * size;
    if (inner == 1) std::memcpy(d, s, size_t(run) * size);
    else if (size == 4) StridedCopy<4>(d, inner, s, 1, run);
    else if (size == 2) StridedCopy<2>(d, inner, s, 1, run);
    else StridedCopy<1>(d, inner, s, 1, run);
  });
}

}  // namespace

void Execute(const Plan& p, void* workspace) {
  if (p.numel == 0) return;
  const Variant& v = *p.kernel.variant;
  const Split& split = p.kernel.split;
  KernelArgs args{p.g.base, p.x.base, p.out.base, size_t(p.numel), p.params, size_t(split.stage_tile)};
  if (p.g.flat && p.x.flat && p.out.flat) {
    RunVariant(v, args, split);
    return;
  }
  const size_t esize = DTypeSize(p.dtype);
  const int64_t blocks = int64_t((p.numel + kBlockElems - 1) / kBlockElems);
  // Blocks of kBlockElems, not split.chunk: a block is what one gather fills.
  const int threads = int(std::min<int64_t>(std::max(1, split.threads), blocks));
  ParallelFor(threads, blocks, [&](int64_t first, int64_t last, int thread) {
    char* buf = static_cast<char*>(workspace) + size_t(thread) * 3 * kBlockElems * esize;
    for (int64_t b = first; b < last; ++b) {
      const uint64_t start = uint64_t(b) * kBlockElems;
      const uint64_t len = std::min<uint64_t>(kBlockElems, p.numel - start);
      KernelArgs a = args;
      a.n = size_t(len);
      char* gb = buf;
      char* xb = buf + kBlockElems * esize;
      char* ob = buf + 2 * kBlockElems * esize;
      if (p.g.flat) a.g = p.g.base + start * esize;
      else Gather(p, p.g, start, len, gb), a.g = gb;
      if (p.x.flat) a.x = p.x.base + start * esize;
      else Gather(p, p.x, start, len, xb), a.x = xb;
      a.out = p.out.flat ? p.out.base + start * esize : ob;
      v.fn(a);
      if (!p.out.flat) Scatter(p, ob, start, len);
    }
  });
}

}  // namespace actgrad::rt
