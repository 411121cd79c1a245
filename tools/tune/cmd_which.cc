// --which-table: which tiling table the library uses on this machine and
// why, and what a machine without a table of its own gets (scripts/tune
// reads it; a user asks it).
#include <sys/stat.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "tiling/dispatch.h"
#include "tiling/freshness.h"
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
                {"accuracy_class", std::string(AccuracyClassName(active.accuracy_class))},
                {"own", active.own},
                {"kind", active.own ? "this machine's own table" : "a table of another machine class (fallback)"}};
  // Which cells have candidates the table never measured (tiling/freshness.h).
  const Freshness& fresh = ActiveTableFreshness();
  j["table"]["freshness"] = fresh.ToJson();
  j["table"]["stale"] = fresh.stale_cells > 0;
  std::fprintf(stderr, "actgrad-tune: table in use: %s, %s: %s\n", active.machine_id.c_str(),
               j["table"]["kind"].get<std::string>().c_str(), fresh.Summary().c_str());
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
