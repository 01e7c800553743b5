// Unit tests of the dashboard's pure modules (importance, event coalescing,
// big-sweep decimation, the columns reader),
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
  path.join(uiDir, 'src/importance.ts'), path.join(uiDir, 'src/live.ts'), path.join(uiDir, 'src/api.ts'),
  path.join(uiDir, 'src/charts/decimate.ts'),
]);
fs.writeFileSync(path.join(out, 'package.json'), '{"type":"module"}');
// Bundler-style imports ('./api') need their extension under node.
for (const f of fs.readdirSync(out, { recursive: true }).filter((f) => f.endsWith('.js')))
  fs.writeFileSync(path.join(out, f), fs.readFileSync(path.join(out, f), 'utf8').replace(/from '(\.\.?\/[\w/-]+)'/g, "from '$1.js'"));
const { paramImportance, ranks } = await import(path.join(out, 'importance.js'));
const { argsort, evenSample, rankSample, occupiedCells, stairCorners } = await import(path.join(out, 'charts/decimate.js'));
const { fromColumns } = await import(path.join(out, 'api.js'));
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

test('importance: a big sweep is scored on a sample, within 0.01 of the whole', () => {
  const rnd = lcg(5);
  const trials = Array.from({ length: 60000 }, () => {
    const a = rnd(), b = rnd(), c = rnd();
    return { params: { a, b, c }, value: 4 * a + Math.sin(6 * b) + 0.3 * rnd() };
  });
  const full = paramImportance(trials, ['a', 'b', 'c'], Infinity);
  const sampled = paramImportance(trials, ['a', 'b', 'c']);
  assert.deepEqual(sampled.map((i) => i.param), full.map((i) => i.param));
  for (let i = 0; i < 3; i++) assert.ok(Math.abs(sampled[i].score - full[i].score) < 0.01, `${full[i].param}: ${sampled[i].score} vs ${full[i].score}`);
  // A different sample size gives a different (close) estimate: the cap is applied.
  assert.notEqual(paramImportance(trials, ['a'], 1000)[0].score, paramImportance(trials, ['a'], Infinity)[0].score);
});

test('argsort: ascending, ties by position', () => {
  assert.deepEqual([...argsort([3, 1, 2, 1])], [1, 3, 2, 0]);
  assert.deepEqual([...argsort([])], []);
});

test('evenSample and rankSample: spread, ascending, the best kept', () => {
  assert.deepEqual([...evenSample(10, 4)], [0, 2, 5, 7]);
  assert.deepEqual([...evenSample(3, 10)], [0, 1, 2]);
  assert.deepEqual([...rankSample(5, 10, 2)], [0, 1, 2, 3, 4]);
  const r = [...rankSample(100000, 6000, 1000)];
  assert.equal(r.length, 6000);
  assert.equal(new Set(r).size, 6000);
  for (let i = 1; i < r.length; i++) assert.ok(r[i] > r[i - 1]);
  for (let k = 0; k < 1000; k++) assert.equal(r[5000 + k], 99000 + k); // the 1,000 best, every one
  assert.equal(r[0], 0); // the worst end is sampled too
  // The sample below the best is spread: no stride is more than twice the mean.
  const strides = r.slice(1, 5000).map((v, i) => v - r[i]);
  assert.ok(Math.max(...strides) <= 2 * (99000 / 5000));
});

test('occupiedCells: one mark per cell, nearest node, non-finite skipped', () => {
  const c = occupiedCells([0.1, 0.4, 2.6, 2.4, NaN, 10], [0, 0.9, 3.1, 2.9, 1, Infinity], 2.5);
  assert.deepEqual([...c.x], [0, 2.5]);
  assert.deepEqual([...c.y], [0, 2.5]);
  // Dense points collapse; every point is within half a cell of a mark.
  const rnd = lcg(9);
  const xs = Array.from({ length: 50000 }, () => rnd() * 600);
  const ys = Array.from({ length: 50000 }, () => 200 + rnd() * 50);
  const d = occupiedCells(xs, ys, 2.5);
  assert.ok(d.x.length <= 241 * 21, `${d.x.length} marks`);
  const marks = new Set(Array.from(d.x, (x, i) => `${x},${d.y[i]}`));
  for (let i = 0; i < xs.length; i += 97) {
    const mx = Math.round(xs[i] / 2.5) * 2.5, my = Math.round(ys[i] / 2.5) * 2.5;
    assert.ok(Math.abs(mx - xs[i]) <= 1.25 && Math.abs(my - ys[i]) <= 1.25);
    assert.ok(marks.has(`${mx},${my}`), `no mark for point ${i}`);
  }
});

test('stairCorners: the same staircase from its corners', () => {
  assert.deepEqual(stairCorners([null, 5, 5, 3, 3, null, 3, 1, 1]), [null, 5, null, 3, null, null, null, 1, 1]);
  assert.deepEqual(stairCorners([null, null]), [null, null]);
  // Expanding the corners back (hold the last value) gives the input's non-null values.
  const rnd = lcg(3);
  let b = Infinity;
  const best = Array.from({ length: 5000 }, () => (b = Math.min(b, rnd())));
  const corners = stairCorners(best);
  assert.ok(corners.filter((v) => v !== null).length < 60);
  let held = null;
  corners.forEach((v, i) => {
    if (v !== null) held = v;
    assert.equal(held, best[i]);
  });
});

test('fromColumns: every field of every trial, dictionaries resolved, absent params left out', () => {
  const c = {
    total: 3, count: 3,
    columns: {
      id: ['s-0', 's-1', 's-2'], number: [0, 1, 2], state: [0, 1, 0], value: [1.5, null, -2],
      attempt: [0, 2, 1], worker: [1, 0, 1], error: [0, 1, 0],
      created_ms: [10, 11, 12], started_ms: [20, 21, 22], finished_ms: [30, 0, 32],
    },
    dictionaries: { state: ['completed', 'failed'], worker: ['w-a', 'w-b'], error: ['', 'boom'] },
    params: { lr: [0.1, 0.2, 0.3], opt: ['adam', null, 'sgd'] },
    metrics: { value: [1.5, null, -2], acc: [0.9, null, 0.7] },
  };
  const ts = fromColumns(c, 's', 'trial');
  assert.equal(ts.length, 3);
  assert.deepEqual(ts[1], {
    id: 's-1', sweep_id: 's', number: 1, kind: 'trial', state: 'failed', params: { lr: 0.2 }, value: null,
    attempt: 2, max_attempts: 0, slots: 0, worker: 'w-a', metrics: {}, error: 'boom', control: 'none',
    created_ms: 11, started_ms: 21, finished_ms: 0, extra: null,
  });
  assert.deepEqual(ts[2].params, { lr: 0.3, opt: 'sgd' });
  assert.deepEqual(ts[0].metrics, { value: 1.5, acc: 0.9 });
  assert.equal(ts[2].worker, 'w-b');
});
