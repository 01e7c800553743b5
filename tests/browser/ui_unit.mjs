// Unit tests of the dashboard's pure modules (importance, event coalescing),
// compiled from web/ui/src with the project's TypeScript into a temp dir and
// run with node:test. Registered with CTest as browser_ui_unit.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';
import assert from 'node:assert/strict';
import { uiDir } from './harness.mjs';

const out = fs.mkdtempSync(path.join(os.tmpdir(), 'hpo-ui-unit-'));
execFileSync(process.execPath, [
  path.join(uiDir, 'node_modules/typescript/bin/tsc'),
  '--outDir', out, '--module', 'es2022', '--target', 'es2022', '--moduleResolution', 'bundler',
  '--strict', '--skipLibCheck', '--lib', 'es2022,dom',
  path.join(uiDir, 'src/importance.ts'), path.join(uiDir, 'src/live.ts'),
]);
fs.writeFileSync(path.join(out, 'package.json'), '{"type":"module"}');
// Bundler-style imports ('./api') need their extension under node.
for (const f of fs.readdirSync(out).filter((f) => f.endsWith('.js')))
  fs.writeFileSync(path.join(out, f), fs.readFileSync(path.join(out, f), 'utf8').replace(/from '(\.\/[\w-]+)'/g, "from '$1.js'"));
const { paramImportance, ranks } = await import(path.join(out, 'importance.js'));
globalThis.window = globalThis; // live.ts schedules with window.setTimeout
const { coalesce } = await import(path.join(out, 'live.js'));
process.on('exit', () => fs.rmSync(out, { recursive: true, force: true }));

// A deterministic generator so the tests need no fixtures.
function lcg(seed) {
  let s = seed >>> 0;
  return () => ((s = (1664525 * s + 1013904223) >>> 0) / 2 ** 32);
}

test('ranks: ties share the mean rank', () => {
  assert.deepEqual(ranks([3, 1, 3, 2]), [2.5, 0, 2.5, 1]);
});

test('importance: the parameter that drives the objective dominates', () => {
  const rnd = lcg(1);
  const trials = Array.from({ length: 500 }, () => {
    const a = rnd(), b = rnd();
    return { params: { a, b, c: rnd() < 0.5 ? 'x' : 'y' }, value: 10 * a + 0.5 * b };
  });
  const imp = paramImportance(trials, ['a', 'b', 'c']);
  assert.equal(imp[0].param, 'a');
  assert.ok(imp[0].share > 0.8, `share of a = ${imp[0].share}`);
  assert.ok(Math.abs(imp.reduce((s, i) => s + i.share, 0) - 1) < 1e-9);
  assert.equal(imp[2].param, 'c');
});

test('importance: a categorical parameter is binned by category', () => {
  const rnd = lcg(2);
  const trials = Array.from({ length: 300 }, (_, i) => {
    const opt = ['sgd', 'adam', 'rmsprop'][i % 3];
    return { params: { opt, noise: rnd() }, value: { sgd: 3, adam: 1, rmsprop: 2 }[opt] + 0.1 * rnd() };
  });
  const imp = paramImportance(trials, ['opt', 'noise']);
  assert.equal(imp[0].param, 'opt');
  // Three perfectly separated groups of 100 ranks: eta^2 = 1 - (100^2/12)/(300^2/12) = 0.889.
  assert.ok(Math.abs(imp[0].score - 8 / 9) < 0.01, `eta^2 of opt = ${imp[0].score}`);
  assert.ok(imp[1].score < 0.05, `eta^2 of noise = ${imp[1].score}`);
});

test('importance: unfinished trials and absent parameters are skipped', () => {
  const trials = [
    { params: { a: 1 }, value: null },
    { params: { a: 1 }, value: 1 },
    { params: { a: 2 }, value: 2 },
    { params: {}, value: 3 },
    { params: { a: 3 }, value: 3 },
  ];
  const kept = [trials[1], trials[2], trials[4]];
  assert.deepEqual(paramImportance(trials, ['a']), paramImportance(kept, ['a']));
  assert.ok(paramImportance(kept, ['a'])[0].score > 0);
  assert.deepEqual(paramImportance([], ['a']), [{ param: 'a', score: 0, share: 0 }]);
});

test('coalesce: a burst of calls runs the refresh at most twice', async () => {
  let runs = 0;
  let release;
  const gate = new Promise((r) => (release = r));
  const refresh = coalesce(async () => {
    runs++;
    if (runs === 1) await gate;
  }, 10);
  refresh();
  await new Promise((r) => setTimeout(r, 5));
  for (let i = 0; i < 100; i++) refresh(); // while the first run is in flight
  release();
  const deadline = Date.now() + 2000;
  while (runs < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  assert.equal(runs, 2);
});
