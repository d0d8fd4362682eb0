#!/usr/bin/env python3
"""census_diff.py - the opcode census (opcode WITH its modifiers, operands dropped) of
every kernel of some CUDA objects or binaries, and the comparison of two censuses.

`decodelab sass` counts base opcodes by class; a refactor that must not change the
machine code needs the finer view: e.g. FFMA.FTZ vs FFMA, or LDS.128 vs LDS.64.

  census_diff.py dump OUT.json FILE...          census of FILE... (cuobjdump -sass) into OUT.json
  census_diff.py diff BEFORE.json AFTER.json [--map OLD=NEW]...
                                                compare kernel by kernel; --map renames kernels
                                                of BEFORE (a regular expression and its
                                                replacement, re.sub syntax, applied in order)
                                                so that renamed templates pair up
Per kernel, 'identical' means the same instruction text (opcodes and operands) in the
same order; 'same census' the same opcode multiset with another order or other
registers; otherwise the opcodes whose counts differ are listed. When an object X.o has
X.ptxas.txt beside it (the Makefile keeps nvcc -Xptxas -v there), the registers, stack
and spills of each kernel are compared too (PTXAS lines). Exit status 0 when every
kernel of BEFORE pairs with one of AFTER, with the same census and ptxas figures.
cuobjdump (+ nvdisasm) from PATH or python -m pip's nvidia/cu*/bin; c++filt from binutils.
"""
import collections
import glob
import json
import os
import re
import shutil
import subprocess
import sys

INSN = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


def tool(name):
    p = shutil.which(name)
    if p:
        return p
    try:
        import nvidia  # the PyPI packages nvidia-cuda-cuobjdump / -nvdisasm

        for d in nvidia.__path__:
            hits = sorted(glob.glob(os.path.join(d, "cu*", "bin", name)))
            if hits:
                return hits[-1]
    except ImportError:
        pass
    sys.exit(f"census_diff.py: {name} not found (PATH, python nvidia/cu*/bin)")


def dump(files):
    cuobjdump = tool("cuobjdump")
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(cuobjdump) + os.pathsep + env.get("PATH", "")
    kernels = {}
    for f in files:
        r = subprocess.run([cuobjdump, "-sass", f], capture_output=True, text=True, env=env)
        if r.returncode != 0:
            if "does not contain device code" in r.stderr:
                continue  # a host-only object
            sys.exit(f"census_diff.py: cuobjdump -sass {f}: {r.stderr.strip()}")
        out = r.stdout
        cur = None
        for line in out.splitlines():
            m = re.search(r"Function : (\S+)", line)
            if m:
                cur = m.group(1)
                kernels[cur] = {"file": os.path.basename(f), "text": []}
                continue
            m = INSN.match(line)
            if cur and m:
                kernels[cur]["text"].append(m.group(2))
        ptxas = os.path.splitext(f)[0] + ".ptxas.txt"  # the Makefile keeps nvcc -Xptxas -v beside the object
        if os.path.exists(ptxas):
            for name, props in ptxas_props(ptxas).items():
                if name in kernels:
                    kernels[name]["ptxas"] = props
    names = list(kernels)
    dem = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
    result = {}
    for mangled, d in zip(names, dem.splitlines()):
        k = kernels[mangled]
        ops = collections.Counter(opcode(t) for t in k["text"])
        result[d] = {"file": k["file"], "mangled": mangled, "total": len(k["text"]), "ops": dict(ops), "text": k["text"],
                     "ptxas": k.get("ptxas", "")}
    return result


def ptxas_props(path):
    """mangled entry name -> 'N registers, S bytes stack, X/Y bytes spill stores/loads' from nvcc -Xptxas -v"""
    props, cur = {}, None
    for line in open(path):
        m = re.search(r"Compiling entry function '(\S+)'", line)
        if m:
            cur = m.group(1)
            props[cur] = ""
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if cur and m:
            props[cur] = f"stack {m.group(1)}, spill {m.group(2)}/{m.group(3)}"
        m = re.search(r"Used (\d+) registers", line)
        if cur and m:
            props[cur] = f"{m.group(1)} registers, " + props[cur]
    return props


def opcode(text):
    """'@!P0 FFMA.FTZ R1, R2, R3, R4' -> 'FFMA.FTZ' (predicate and operands dropped)."""
    parts = text.split()
    if parts and parts[0].startswith("@"):
        parts = parts[1:]
    return parts[0] if parts else ""


def last_depbar(text):
    """index of the last DEPBAR (cp.async.wait_group): in the decode kernels, the end of the tile loop"""
    idx = [i for i, t in enumerate(text) if opcode(t).startswith("DEPBAR")]
    return idx[-1] if idx else "-"


def norm_regs(text):
    """the instruction with register numbers replaced (to tell a register-allocation move)"""
    return re.sub(r"\b(U?R|U?P)\d+\b", r"\1#", text)


def diff(before, after, maps):
    def rename(n):
        for old, new in maps:
            n = re.sub(old, new, n)
        return n

    bad = 0
    seen = set()
    rows = collections.Counter()
    lines = []
    for name in sorted(before):
        new = rename(name)
        b = before[name]
        a = after.get(new)
        if a is None:
            lines.append(f"MISSING {name}  (looked for {new})")
            bad += 1
            continue
        seen.add(new)
        if a.get("ptxas") != b.get("ptxas"):
            bad += 1
            rows["ptxas differs"] += 1
            lines.append(f"PTXAS {name}: {b.get('ptxas') or '?'} -> {a.get('ptxas') or '?'}")
        if a["text"] == b["text"]:
            rows["identical"] += 1
            lines.append(f"identical ({b['total']:5d} insts) {name}")
        elif a["ops"] == b["ops"]:
            regs = [norm_regs(t) for t in a["text"]] == [norm_regs(t) for t in b["text"]]
            first = next(i for i, (x, y) in enumerate(zip(b["text"], a["text"])) if x != y)
            last = b["total"] - next(i for i, (x, y) in enumerate(zip(b["text"][::-1], a["text"][::-1])) if x != y)
            rows["same census"] += 1
            lines.append(f"same census ({'registers renumbered only' if regs else 'order differs'}, instructions "
                         f"{first}-{last} of {b['total']}; last DEPBAR at {last_depbar(b['text'])}) {name}")
        else:
            bad += 1
            rows["differs"] += 1
            keys = sorted(set(a["ops"]) | set(b["ops"]))
            d = ", ".join(f"{k} {b['ops'].get(k, 0)}->{a['ops'].get(k, 0)}" for k in keys
                          if a["ops"].get(k, 0) != b["ops"].get(k, 0))
            lines.append(f"DIFFERS {name}: total {b['total']}->{a['total']}: {d}")
    for name in sorted(set(after) - seen):
        rows["new"] += 1
        lines.append(f"new ({after[name]['total']:5d} insts) {name}")
    print("\n".join(lines))
    print("summary: " + ", ".join(f"{k} {v}" for k, v in sorted(rows.items())) + f", missing/differing {bad}")
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "dump":
        with open(argv[2], "w") as f:
            json.dump(dump(argv[3:]), f, indent=0, sort_keys=True)
        return 0
    if len(argv) >= 4 and argv[1] == "diff":
        maps = []
        rest = argv[4:]
        while rest:
            if rest[0] != "--map" or len(rest) < 2 or "=" not in rest[1]:
                sys.exit(__doc__)
            old, new = rest[1].split("=", 1)
            maps.append((old, new))
            rest = rest[2:]
        with open(argv[2]) as f:
            before = json.load(f)
        with open(argv[3]) as f:
            after = json.load(f)
        return diff(before, after, maps)
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
