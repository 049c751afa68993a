#!/usr/bin/env bash
# bench-nodemodule.sh DIR [FILES]: makes the benchmarks' node:test project at
# DIR (bench-ratios.sh): FILES (default 60) test files whose tests compute for
# real — SHA-256 chains, a merge sort checked against Array.prototype.sort, a
# prime sieve checked against trial division — deterministic, no network, no
# npm dependencies; one `node-test` check with its JUnit report as
# `runmill init` writes it, committed on main, and a branch `cand` that
# changes one source file honestly (a merge sort that hands short runs to
# insertion sort: same results, so the verification is merge-ready). The
# caller's git identity (GIT_AUTHOR_* …) is used. Node ≥ 20 (scripts/setup.sh).
set -euo pipefail
dir=${1:?usage: bench-nodemodule.sh DIR [FILES]}
files=${2:-60}
rm -rf "$dir"; mkdir -p "$dir/.runmill" "$dir/src" "$dir/test"; cd "$dir"
cat > package.json <<'J'
{
  "name": "bench-node",
  "private": true,
  "scripts": { "test": "node --test" }
}
J
cat > src/lcg.js <<'JS'
'use strict';
// A fixed linear congruential generator: the same inputs on every run.
function lcg(seed) {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0);
}
function numbers(seed, n) {
  const next = lcg(seed);
  const a = new Array(n);
  for (let i = 0; i < n; i++) a[i] = next();
  return a;
}
module.exports = { lcg, numbers };
JS
cat > src/hash.js <<'JS'
'use strict';
const { createHash } = require('node:crypto');
// chain hashes b n times over, each round over the previous digest.
function chain(b, n) {
  let d = createHash('sha256').update(b).digest();
  for (let i = 0; i < n; i++) d = createHash('sha256').update(d).digest();
  return d.toString('hex');
}
module.exports = { chain };
JS
cat > src/sort.js <<'JS'
'use strict';
// mergeSort is a stable, top-down merge sort of numbers.
function mergeSort(a) {
  if (a.length < 2) return a.slice();
  const mid = a.length >>> 1;
  const l = mergeSort(a.slice(0, mid)), r = mergeSort(a.slice(mid));
  const out = new Array(a.length);
  let i = 0, j = 0, k = 0;
  while (i < l.length && j < r.length) out[k++] = l[i] <= r[j] ? l[i++] : r[j++];
  while (i < l.length) out[k++] = l[i++];
  while (j < r.length) out[k++] = r[j++];
  return out;
}
module.exports = { mergeSort };
JS
cat > src/primes.js <<'JS'
'use strict';
// sieve counts the primes below n (Eratosthenes).
function sieve(n) {
  const composite = new Uint8Array(n);
  let count = 0;
  for (let i = 2; i < n; i++) {
    if (composite[i]) continue;
    count++;
    for (let j = i * i; j < n; j += i) composite[j] = 1;
  }
  return count;
}
// isPrime is trial division: slow, obviously right.
function isPrime(m) {
  if (m < 2) return false;
  for (let d = 2; d * d <= m; d++) if (m % d === 0) return false;
  return true;
}
module.exports = { sieve, isPrime };
JS
for i in $(seq -w 1 "$files"); do
  n=$((10#$i))
  cat > "test/t$i.test.js" <<JS
'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert');
const { chain } = require('../src/hash');
const { mergeSort } = require('../src/sort');
const { sieve, isPrime } = require('../src/primes');
const { numbers } = require('../src/lcg');

describe('t$i', () => {
  it('hash chains are deterministic', () => {
    assert.strictEqual(chain('t$i', 10000), chain('t$i', 10000));
  });
  it('merge sort agrees with Array.prototype.sort', () => {
    const a = numbers($n, 30000);
    assert.deepStrictEqual(mergeSort(a), a.slice().sort((x, y) => x - y));
  });
  it('the sieve agrees with trial division', () => {
    const n = 30000 + $n * 150;
    let count = 0;
    for (let m = 0; m < n; m++) if (isPrime(m)) count++;
    assert.strictEqual(sieve(n), count);
  });
});
JS
done
cat > .runmill/checks.yaml <<'Y'
checks:
  # As `runmill init` writes it for node --test: spec to stdout, JUnit to the report.
  - id: node-test
    run: node --test --test-reporter=spec --test-reporter-destination=stdout --test-reporter=junit --test-reporter-destination=reports/node-test.xml
    report: {path: reports/node-test.xml, format: junit, identity: suite-path}
    timeout: 10m
Y
printf 'reports/\nnode_modules/\n' > .gitignore
git init -qb main && git add -A && git commit -qm base
git checkout -qb cand
python3 - <<'PY'
p = "src/sort.js"
s = open(p).read()
s = s.replace("""function mergeSort(a) {
  if (a.length < 2) return a.slice();""", """// Short runs go to insertion sort: fewer allocations, the same order.
function mergeSort(a) {
  if (a.length <= 16) return insertionSort(a.slice());""")
s = s.replace("module.exports", """function insertionSort(a) {
  for (let i = 1; i < a.length; i++) {
    const v = a[i];
    let j = i - 1;
    while (j >= 0 && a[j] > v) { a[j + 1] = a[j]; j--; }
    a[j + 1] = v;
  }
  return a;
}
module.exports""")
open(p, "w").write(s)
PY
git commit -qam "sort: insertion sort for short runs"
git checkout -q main
