// `actgrad-tune merge --out TABLE [--allow-partial] SHARD_TABLE...`: joins the
// tables of shards (--shard K/N) into one (tools/tune/shard.h).
#include <cstdio>

#include "tools/tune/cmd.h"
#include "tools/tune/shard.h"

namespace actgrad::tune::cmd {

int Merge(const MergeFlags& flags) {
  MergeSummary ms;
  std::string err;
  if (!MergeShardFiles(flags.out, flags.inputs, flags.allow_partial, &ms, &err)) {
    std::fprintf(stderr, "actgrad-tune: %s; nothing written\n", err.c_str());
    return 2;
  }
  std::string missing;
  for (int k : ms.missing) missing += (missing.empty() ? "" : ",") + std::to_string(k);
  std::printf("wrote %s (%zu entries from %zu of %d shards%s)\n", flags.out.c_str(), ms.entries, ms.merged.size(),
              ms.count, missing.empty() ? "" : ("; missing " + missing).c_str());
  return 0;
}

}  // namespace actgrad::tune::cmd
