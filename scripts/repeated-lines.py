#!/usr/bin/env python3
"""Repeated-lines metric of the tree (issue 20): the share of non-test, non-generated Go lines (non-blank,
import blocks left out) that are a copy, beyond the first occurrence in path order, of a run of 6 or more
consecutive non-blank lines standing identically (after trimming whitespace) elsewhere.
Usage: scripts/repeated-lines.py [ROOT]   (default: the current directory)"""
import os, sys, hashlib, collections
root = sys.argv[1] if len(sys.argv) > 1 else "."
W = 6
files = []
for dp, dn, fn in os.walk(root):
    dn[:] = [d for d in dn if d not in ('.git', '.wt', '.cache', 'node_modules')]
    for f in fn:
        if f.endswith('.go') and not f.endswith('_test.go') and not f.endswith('.gen.go') and not f.endswith('.pb.go'):
            p = os.path.join(dp, f)
            lines, inimport = [], False
            for l in open(p, encoding='utf-8', errors='replace'):
                l = l.strip()
                if l == 'import (':
                    inimport = True
                elif inimport and l == ')':
                    inimport = False
                elif l and not inimport:
                    lines.append(l)
            files.append((os.path.relpath(p, root), lines))
where = collections.defaultdict(list)
for fi, (p, lines) in enumerate(files):
    for i in range(len(lines) - W + 1):
        win = lines[i:i+W]
        # skip windows that are nothing but braces/imports punctuation
        if sum(1 for l in win if len(l) > 3) < 4:
            continue
        h = hashlib.sha1('\n'.join(win).encode()).digest()
        where[h].append((fi, i))
dup = [set() for _ in files]
for h, locs in where.items():
    if len(locs) > 1:
        for fi, i in sorted(locs)[1:]:  # the copies, not the first occurrence
            dup[fi].update(range(i, i + W))
total = sum(len(l) for _, l in files)
rep = sum(len(d) for d in dup)
per = collections.Counter()
for (p, _), d in zip(files, dup):
    per[p.split('/')[0] + ('/' + p.split('/')[1] if p.startswith(('persistence/', 'internal/')) and p.count('/') > 1 else '')] += len(d)
print(f'non-test Go lines (non-blank, import blocks left out): {total}; repeated: {rep} ({100*rep/total:.2f}%)')
for k, v in per.most_common(8):
    print(f'  {k}: {v}')
