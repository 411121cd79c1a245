#!/usr/bin/env python3
"""Checks AscendC kernel objects for what bisheng (CANN's device compiler)
rejects or miscompiles but g++ and the emulator accept.

The kernels are compiled for this check at -O0 with one section per function
and per variable (atlas/tests/device_code.cmake): at -O0 nothing is folded or
inlined away, so every read of namespace-scope data that is not a constant
expression stays a load from that data's symbol, and every call stays a
relocation in the caller's section. At -O2 the same source may or may not
keep them (GCC 12 unrolls and folds some constant-table loops, not others),
so an optimised object would make the verdict depend on the optimiser.

Kernel code is every function and variable that is not the emulator's
(namespaces AscendC, AscendEmu, types half and bfloat16_t) nor the C++
library's: the kernels' own namespaces and their extern "C" entries.

Rules (the AscendC programming guide, "C/C++ syntax restrictions", and the
CCE guide's kernel-function limits: no virtual functions, no runtime
recursion, no dynamic allocation, no STL, no exceptions or RTTI, no I/O, no
double):
  data       kernel code defines no data: namespace-scope, static-member and
             function-local static variables live in GM on the device, need
             __gm__ and are not what a compile for the emulator means (keep
             constants as immediates or local arrays); vtables and typeinfo of
             kernel types mean virtual functions or RTTI.
  host-call  kernel functions call only kernel functions and the AscendC API
             (plus memcpy/memset/memmove, which compilers emit for aggregate
             copies, and unwinding/instrumentation the host build adds):
             no std:: calls, new/delete/malloc, throw/catch, printf, libm.
  recursion  no cycle among kernel functions (the AI Core has no runtime
             recursion).
  double     no double or long double arithmetic in kernel functions (the AI
             Core has none; x86-64 and AArch64 objects are checked).

Usage: device_code_check.py [--objdump PATH] [--expect RULE] OBJECT...
Exit 0 when every object passes (or, with --expect, when every object is
rejected and only by RULE); 1 otherwise; 2 on a usage or tool error.
"""
import argparse
import re
import subprocess
import sys

EMULATOR = {"AscendC", "AscendEmu", "half", "bfloat16_t"}
LIBRARY = {"std", "__gnu_cxx", "__pstl", "__cxxabiv1", "__gnu_debug"}
# C symbols a host compile adds around kernel code that are not the kernel's:
# unwinding through emulator calls that throw, stack protector, TLS access,
# sanitizer and coverage instrumentation, EH personality references.
RUNTIME_OK = re.compile(r"^(_Unwind_Resume|__stack_chk_fail|__tls_get_addr|_GLOBAL_OFFSET_TABLE_|"
                        r"__(a|ub|t|m|hwa)san\w*|___asan\w*|__sanitizer\w*|__odr_asan\w*|__gcov\w*|__llvm\w*|"
                        r"__prof[cdn]\w*|__sancov\w*|__clang_call_terminate|DW\.ref\..*|\.L.*)$")
COPIES = {"memcpy", "memset", "memmove"}
ALLOC = {"malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "valloc", "memalign"}
EXCEPT = {"__cxa_throw", "__cxa_allocate_exception", "__cxa_free_exception", "__cxa_begin_catch",
          "__cxa_end_catch", "__cxa_rethrow", "__cxa_call_unexpected", "__cxa_bad_cast", "__cxa_bad_typeid"}
RTTI = {"__dynamic_cast", "__cxa_pure_virtual", "__cxa_deleted_virtual"}
IO = {"printf", "vprintf", "fprintf", "vfprintf", "sprintf", "snprintf", "vsnprintf", "puts", "putchar", "fputs",
      "fputc", "fwrite", "fread", "fopen", "fclose", "fflush", "write", "read", "open", "close", "perror",
      "__printf_chk", "__fprintf_chk", "__sprintf_chk", "__snprintf_chk"}
LIBM = re.compile(r"^(a?(sin|cos|tan)h?|atan2|exp2?|expm1|log(2|10|1p)?|pow|sqrt|cbrt|hypot|erfc?|tgamma|lgamma|"
                  r"fabs|floor|ceil|round|trunc|rint|nearbyint|fmod|remainder|fmin|fmax|fma|ldexp|frexp|modf)[fl]?$")
X86_DOUBLE = re.compile(r"^v?(cvt(t)?(ss2sd|sd2ss|si2sd[lq]?|sd2si[lq]?|pd2ps|ps2pd|dq2pd|pd2dq)|"
                        r"(add|sub|mul|div|sqrt|min|max|u?comi|cmp[a-z]*)sd|f[a-z0-9]+)$")
ARM_DOUBLE_OP = re.compile(r"^(f(add|sub|mul|div|sqrt|madd|msub|nmadd|nmsub|neg|abs|cmpe?|ccmpe?|cvt[a-z]*|"
                           r"max(nm)?|min(nm)?|csel|rint[a-z])|[su]cvtf)$")
ARM_DREG = re.compile(r"\b[dq]\d+\b")


class ToolError(Exception):
    pass


def run(cmd):
    try:
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError) as e:
        raise ToolError(f"{' '.join(cmd)}: {e}") from e


def owner(sym):
    """The first scope of a symbol: a namespace or class for mangled names
    (from the mangling, not the demangled text, which starts with return
    types), the name itself for C names, 'operator' for operator functions."""
    if not sym.startswith("_Z"):
        return sym
    s = sym[2:]
    for special in ("TV", "TI", "TS", "GV", "TH", "TW", "TT", "TC", "GR"):
        if s.startswith(special):
            s = s[2:]
            break
    s = s.lstrip("Z")  # local entity: the enclosing function's name follows
    if s.startswith("L"):
        s = s[1:]
    if s.startswith("N"):
        s = s[1:].lstrip("KVrRO")
    if s[:2] in ("St", "Sa", "Sb", "Ss", "Si", "So", "Sd"):
        return "std"
    m = re.match(r"L?(\d+)", s)
    if m:
        return s[m.end():m.end() + int(m.group(1))]
    return "operator"


def is_kernel(sym):
    o = owner(sym)
    return o not in EMULATOR and o not in LIBRARY and o != "operator" and not RUNTIME_OK.match(sym)


def symbols(objdump, obj):
    """[(name, demangled, flags, section, is_function)] of the symbol table."""
    raw, dem = run([objdump, "-t", "-w", obj]), run([objdump, "-t", "-w", "-C", obj])
    if len(raw) != len(dem):
        raise ToolError(f"{obj}: objdump -t and -t -C disagree on the symbol count")
    out = []
    for r, d in zip(raw, dem):
        m = re.match(r"^[0-9a-f]+ (.{7}) (\S+)\t[0-9a-f]+ (?:\.hidden |\.protected |\.internal )?(.*)$", r)
        md = re.match(r"^[0-9a-f]+ .{7} \S+\t[0-9a-f]+ (?:\.hidden |\.protected |\.internal )?(.*)$", d)
        if not m or not md:
            continue
        flags, section, name = m.groups()
        if flags[5] in "dD" or flags[6] == "f" or section in ("*UND*", "*ABS*", "*COM*") or not name:
            continue  # debugging, file and section symbols; undefined symbols
        out.append((name, md.group(1), flags, section, flags[6] == "F"))
    return out


def relocations(objdump, obj):
    """{section: [(target, demangled target)]} of every relocation."""
    raw, dem = run([objdump, "-r", "-w", obj]), run([objdump, "-r", "-w", "-C", obj])
    if len(raw) != len(dem):
        raise ToolError(f"{obj}: objdump -r and -r -C disagree on the line count")
    out, section = {}, None
    for r, d in zip(raw, dem):
        m = re.match(r"^RELOCATION RECORDS FOR \[(.*)\]:$", r)
        if m:
            section = m.group(1)
            out.setdefault(section, [])
            continue
        fields, dfields = r.split(None, 2), d.split(None, 2)
        if section is None or len(fields) < 3 or not re.match(r"^[0-9a-f]+$", fields[0]):
            continue
        strip = lambda v: re.sub(r"[+-]0x[0-9a-f]+$", "", v.strip())
        out[section].append((strip(fields[2]), strip(dfields[2]) if len(dfields) == 3 else fields[2]))
    return out


def arch(objdump, obj):
    text = " ".join(run([objdump, "-f", obj]))
    if "x86-64" in text:
        return "x86-64"
    if "aarch64" in text:
        return "aarch64"
    return None


def disassembly(objdump, obj):
    """{function symbol: [(mnemonic, operands)]}."""
    out, fn = {}, None
    for line in run([objdump, "-d", "-w", "--no-show-raw-insn", obj]):
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            fn = m.group(1)
            out.setdefault(fn, [])
            continue
        m = re.match(r"^\s+[0-9a-f]+:\s+(\S+)\s*(.*)$", line)
        if fn is not None and m:
            out[fn].append((m.group(1), m.group(2)))
    return out


def host_call_reason(target, callees):
    o = owner(target)
    if (target in ALLOC or target.startswith("__cxa_throw_bad_array") or
            o == "operator" and re.match(r"^_Z(nw|na|dl|da)", target)):
        return "dynamic allocation (the AI Core has no heap: size buffers with TPipe::InitBuffer)"
    if target in EXCEPT or target.startswith("_ZTI") and "__cxa_throw" in callees:
        return "exceptions (no throw or catch on the AI Core: stop with AscendC::Trap())"
    if target in RTTI or target.startswith(("_ZTI", "_ZTV", "_ZTS")):
        return "virtual functions or RTTI (no vtables, typeid or dynamic_cast on the AI Core)"
    if target in ("__cxa_guard_acquire", "__cxa_guard_release", "__cxa_guard_abort", "__cxa_atexit"):
        return "a function-local static (data in GM on the device)"
    if target in IO or o == "std" and re.search(r"(cout|cerr|clog|printf|ostream)", target):
        return "host I/O (the AI Core has no stdio: AscendC::printf needs ENABLE_PRINTF and a dump buffer)"
    if o in LIBRARY:
        return "the C++ standard library (not available on the AI Core)"
    if LIBM.match(target):
        return "the host math library (scalar libm is not available on the AI Core: use the vector unit's Exp, Ln, Sqrt)"
    return "a host function (kernel code calls __aicore__ functions only)"


def check_object(objdump, obj):
    """[(rule, where, message)] for one object."""
    syms = symbols(objdump, obj)
    relocs = relocations(objdump, obj)
    violations = []

    # data: every defined variable (any data section, TLS included) of kernel code
    for name, dem, flags, section, is_fn in syms:
        if is_fn or section.startswith((".text", ".init", ".fini", ".group", ".note", ".comment",
                                        ".eh_frame", ".gcc_except_table", ".debug")):
            continue
        if not is_kernel(name):
            continue
        if name.startswith(("_ZTV", "_ZTI", "_ZTS")):
            what = "virtual functions or RTTI of a kernel type (no vtables or typeinfo on the AI Core)"
        elif name.startswith("_ZZ"):
            what = "a function-local static variable: it lives in GM on the device"
        else:
            what = ("namespace-scope data read by device code: on the device it is a global in GM (it would need "
                    "__gm__); keep constants as immediates or in local arrays")
        violations.append(("data", f"{dem} [{section}]", what))

    # functions: a kernel function body is a section (-ffunction-sections);
    # constructor and destructor variants share one body under several names
    section_of, dem_of, bodies, data = {}, {}, {}, set()
    for name, dem, flags, section, is_fn in syms:
        if not is_fn:
            data.add(name)
        else:
            dem_of[name] = dem
            section_of[name] = section
            if is_kernel(name):
                bodies.setdefault(section, name)
    if not bodies:
        raise ToolError(f"{obj}: no kernel function found")
    if ".text" in bodies:
        raise ToolError(f"{obj}: kernel code in the shared .text section: compile with -ffunction-sections")

    # host-call, and the call graph among kernel function bodies
    calls = {sec: set() for sec in bodies}
    for sec, fn in bodies.items():
        for target, dtarget in relocs.get(sec, []):
            if target.startswith("."):  # a section symbol: a function body, else a constant pool
                if target in bodies:
                    calls[sec].add(target)
                continue
            if section_of.get(target) in bodies:
                calls[sec].add(section_of[target])
                continue
            o = owner(target)
            if o in EMULATOR or target in COPIES or RUNTIME_OK.match(target) or target in data:
                continue  # data defined here is the data rule's
            callees = {t for t, _ in relocs.get(sec, [])}
            violations.append(("host-call", dem_of[fn], f"calls {dtarget}: {host_call_reason(target, callees)}"))

    # recursion: strongly connected components of the kernel call graph (Tarjan)
    index, low, stack, on, counter, sccs = {}, {}, [], set(), [0], []

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in calls[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            sccs.append(comp)

    sys.setrecursionlimit(max(10000, 4 * len(calls)))
    for v in calls:
        if v not in index:
            strong(v)
    for comp in sccs:
        if len(comp) > 1 or comp[0] in calls[comp[0]]:
            names = ", ".join(sorted(dem_of[bodies[c]] for c in comp))
            violations.append(("recursion", dem_of[bodies[comp[0]]],
                               f"recursive calls among {names}: no runtime recursion on the AI Core"))

    # double: floating-point instructions on double (or x87) registers
    machine = arch(objdump, obj)
    if machine is None:
        print(f"{obj}: note: double arithmetic is checked on x86-64 and AArch64 objects only", file=sys.stderr)
    else:
        kernel_fns = {fn for fn, sec in section_of.items() if sec in bodies}
        for fn, insns in disassembly(objdump, obj).items():
            if fn not in kernel_fns:
                continue
            for mnem, ops in insns:
                hit = X86_DOUBLE.match(mnem) if machine == "x86-64" else (
                    ARM_DOUBLE_OP.match(mnem) and ARM_DREG.search(ops))
                if hit:
                    violations.append(("double", dem_of[fn],
                                       f"'{(mnem + ' ' + ops).strip()}': double or long double arithmetic (the AI Core has "
                                       "none: compute in float)"))
                    break
    return violations


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objdump", default="objdump")
    ap.add_argument("--expect", choices=["data", "host-call", "recursion", "double"],
                    help="pass only if every object is rejected, and only by this rule")
    ap.add_argument("objects", nargs="+")
    a = ap.parse_args()
    ok = True
    try:
        for obj in a.objects:
            v = check_object(a.objdump, obj)
            for rule, where, msg in v:
                print(f"{obj}: {rule}: {where}: {msg}")
            if a.expect:
                others = sorted({r for r, _, _ in v if r != a.expect})
                if not v or others:
                    ok = False
                    print(f"{obj}: expected a '{a.expect}' rejection, got "
                          f"{'none' if not v else 'also ' + ', '.join(others)}")
            elif v:
                ok = False
            else:
                print(f"{obj}: passes (data, host-call, recursion, double)")
    except ToolError as e:
        print(f"device_code_check: {e}", file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
