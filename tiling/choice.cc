#include "tiling/choice.h"

#include "variants/thread_pool.h"

namespace actgrad {

std::string Choice::Key() const {
  std::string k = variant + "|t" + std::to_string(split.threads) + "|c" + std::to_string(split.chunk) + "|s" +
                  std::to_string(split.stage_tile);
  if (split.tile_rows || split.tile_cols)  // keys without a tile stay as they were
    k += "|r" + std::to_string(split.tile_rows) + "x" + std::to_string(split.tile_cols);
  if (split.transpose_result) k += "|tr";
  return k;
}

KernelChoice Resolve(const Choice& c, bool from_table) {
  KernelChoice k;
  const Variant* v = FindVariant(c.variant);
  k.variant = v && v->supported ? v : nullptr;
  k.split = c.split;
  k.from_table = from_table;
  return k;
}

Choice DefaultChoice(Op op, DType dtype, GeluApprox mode, uint64_t n) {
  Choice c;
  if (const Variant* v = DefaultVariant(op, dtype, mode)) c.variant = v->name;
  c.split.threads = kDefaultThreadRule.Threads(n, MaxThreads());
  return c;
}

}  // namespace actgrad
