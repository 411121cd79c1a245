#!/usr/bin/env python3
"""The tree's one-way arrows (docs/architecture.md), checked on the sources.

    tools -> runtime (aclnn API) -> tiling (dispatch) -> kernels -> include

A quoted #include names the room it reaches into by its first path part
("tiling/dispatch.h" -> tiling); a bare name ("soc.h") stays in its own
folder. Each room lists the rooms it must not reach; CMake files must not
compile another room's sources or defer calls to patch the order.
Exit status 1 with one line per violation.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
SOURCES = {".h", ".hh", ".hpp", ".cc", ".cpp", ".inc"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# room (path prefix) -> first include path parts it must not use
TOOL_ROOMS = ("tools", "bench", "tests", "atlas", "reports", "scripts")
FORBIDDEN = {
    "include": TOOL_ROOMS + ("runtime", "tiling", "variants", "math", "ops", "reference", "kernels"),
    "kernels": TOOL_ROOMS + ("runtime", "tiling"),
    "tiling": TOOL_ROOMS + ("runtime",),
    "runtime": TOOL_ROOMS,
    "tools": ("bench", "tests", "reports", "scripts"),
    "bench": ("tests", "reports", "scripts", "atlas"),
    # Atlas: only its tuner backends (atlas/tune) and tools see the tuner.
    "atlas/kernels": TOOL_ROOMS,
    "atlas/emu": TOOL_ROOMS,
    "atlas/include": TOOL_ROOMS,
    "atlas/host": ("tools", "bench", "tests", "reports", "scripts"),
    "atlas/model": ("tools", "bench", "tests", "reports", "scripts"),
    "atlas/runner": ("tools", "bench", "tests", "reports", "scripts"),
}


# Variables that name the CMake file's own folder (ATLAS_DIR: atlas/CMakeLists.txt).
OWN_DIR_VARS = {"CMAKE_CURRENT_SOURCE_DIR", "CMAKE_CURRENT_LIST_DIR", "CMAKE_CURRENT_BINARY_DIR", "ATLAS_DIR"}


def room_of(rel):
    best = None
    for room in FORBIDDEN:
        if rel == room or rel.startswith(room + "/"):
            if best is None or len(room) > len(best):
                best = room
    return best


def main():
    errors = []
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT).as_posix()
        # (bad_tree: this checker's own test fixture, which breaks every rule)
        if rel.startswith((".git/", "build", ".venv/", "tests/layout/bad_tree/")) or not path.is_file():
            continue
        if path.suffix in SOURCES:
            room = room_of(rel)
            if room is None:
                continue
            for m in INCLUDE.finditer(path.read_text(errors="replace")):
                first = m.group(1).split("/")[0]
                if "/" in m.group(1) and first in FORBIDDEN[room]:
                    errors.append(f"{rel}: {room}/ must not include \"{m.group(1)}\"")
        elif path.name == "CMakeLists.txt" or path.suffix == ".cmake":
            text = path.read_text(errors="replace")
            if re.search(r"cmake_language\s*\(\s*DEFER", text):
                errors.append(f"{rel}: cmake_language(DEFER) (order the directories instead)")
            here = path.parent.relative_to(ROOT).as_posix()
            # A source named through a variable other than this folder's own
            # is another folder's (generated sources are named without a path).
            for call in re.finditer(r"\b(?:add_library|add_executable|target_sources)\s*\(([^)]*)\)", text):
                for m in re.finditer(r"\$\{(\w+)\}/([\w./-]+\.(?:cc|cpp))\b", call.group(1)):
                    if m.group(1) not in OWN_DIR_VARS:
                        errors.append(f"{rel}: compiles ${{{m.group(1)}}}/{m.group(2)}, a source of another folder")
    for e in errors:
        print(e)
    print(f"check_arrows: {len(errors)} violation(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
