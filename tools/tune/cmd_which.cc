// --which-table: which tiling table the library uses on this machine and
// why, and what a machine without a table of its own gets (scripts/tune
// reads it; a user asks it).
#include <sys/stat.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "tiling/dispatch.h"
#include "tiling/machine.h"
#include "tiling/new_machine.h"
#include "tools/tune/cmd.h"

namespace actgrad::tune::cmd {

int WhichTable() {
  const MachineFacts me = ThisMachineFacts();
  nlohmann::json j = {{"machine_id", me.id},
                      {"isa_family", me.isa_family},
                      {"cpu_model", CpuModelName()},
                      {"facts", {{"features", me.features}, {"l2", me.l2}, {"llc", me.llc}, {"cores", me.cores}}}};
  const ActiveTableInfo& active = ActiveTable();
  j["table"] = {{"machine_id", active.machine_id}, {"source", active.source}, {"reason", active.reason},
                {"gap_tables", active.gap_tables},
                {"accuracy_class", std::string(AccuracyClassName(active.accuracy_class))}};
  const std::optional<NewMachineFallback> fallback = FallbackForNewMachine();
  j["new_machine_fallback"] = fallback ? nlohmann::json{{"machine_id", fallback->table.machine_id},
                                                        {"reason", fallback->reason},
                                                        {"gap_tables", fallback->gap_tables},
                                                        {"entries", fallback->table.entries.size()}}
                                       : nlohmann::json{{"machine_id", "default"}, {"reason", "portable default"}};
  const std::string dir = UserTableCacheDir();
  struct stat st;
  const std::string cached = dir.empty() ? "" : dir + "/" + me.id + ".json";
  j["user_cache"] = {{"dir", dir}, {"table", cached}, {"exists", !cached.empty() && ::stat(cached.c_str(), &st) == 0}};
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
}

}  // namespace actgrad::tune::cmd
