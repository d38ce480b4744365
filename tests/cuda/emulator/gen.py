# tests/cuda/emulator/gen.py: rewrites a .cu file (or bf16_math.h) for the host emulator: kernel
# launches become emu::launch calls, __shared__ variables per-block storage, vector casts checked
# casts. Usage: gen.py INPUT OUTPUT
import re, sys
src = open(sys.argv[1]).read()
is_header = sys.argv[1].endswith('.h')
if is_header:
    k = src.rfind('#ifdef __CUDACC__')
    src = src[:k] + '#if 1\n#include "shim.h"' + src[k + len('#ifdef __CUDACC__'):]
# extern dynamic shared memory
src = re.sub(r'extern\s+__shared__\s+(?:__align__\(\d+\)\s+)?([\w:]+(?:\s+[\w:]+)*?)\s+(\w+)\[\];',
             lambda m: '%s* %s = reinterpret_cast<%s*>(emu::smem());' % (m.group(1), m.group(2), m.group(1)), src)
# static shared memory
def stat(m):
    t, name, dims = m.group(1), m.group(2), m.group(3) or ''
    return 'static char emu_key_%s; auto& %s = emu::shared_var<%s%s>(&emu_key_%s);' % (name, name, t, dims, name)
src = re.sub(r'__shared__\s+(?:__align__\(\d+\)\s+)?([\w:]+)\s+(\w+)((?:\[[^\]]*\])*)\s*;', stat, src)
src = re.sub(r'reinterpret_cast<((?:const )?(?:float4|uint4|uint2|float2|int4)\s*\*)>', r'emu::vcast<\1>', src)
out = []; i = 0
while True:
    j = src.find('<<<', i)
    if j < 0: out.append(src[i:]); break
    k = j
    while src[k-1] in ' \n\t': k -= 1
    depth = 0
    while True:
        c = src[k-1]
        if c == '>': depth += 1
        elif c == '<': depth -= 1
        elif depth == 0 and not (c.isalnum() or c in '_:'): break
        k -= 1
    name = src[k:j].strip()
    e = src.find('>>>', j)
    cfg = src[j+3:e]
    parts = []; depth = 0; cur = ''
    for ch in cfg:
        if ch == ',' and depth == 0: parts.append(cur); cur = ''; continue
        if ch in '([{': depth += 1
        if ch in ')]}': depth -= 1
        cur += ch
    parts.append(cur)
    while len(parts) < 4: parts.append('0' if len(parts) == 2 else 'nullptr')
    rest = src[e+3:].lstrip()
    assert rest[0] == '(', name
    e2 = src.find('(', e+3)
    out.append(src[i:k]); out.append('emu::launch(%r, %s, dim3(%s), dim3(%s), %s, %s, ' % (name.replace('\n',' '), name, parts[0], parts[1], parts[2], parts[3]))
    i = e2 + 1
res = ''.join(out)
res = re.sub(r"emu::launch\('([^']*)'", r'emu::launch("\1"', res)
if not is_header: res = '#include "shim.h"\n' + res
open(sys.argv[2], "w").write(res + "\n")
