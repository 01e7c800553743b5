// Browser test of the dashboard against a real hpo-scheduler (embedded Redis)
// and hpo-worker, in headless Debian Chromium (playwright-core). Each check
// prints PASS/FAIL; screenshots go to the artifacts dir. Every wait is bounded.
//
//   node tests/browser/run.mjs --scheduler BIN --worker BIN [--artifacts DIR]
import path from 'node:path';
import fs from 'node:fs';
import { Cluster, launchChromium, parseArgs, repoRoot, syntheticSpec, until } from './harness.mjs';

const opts = parseArgs(process.argv.slice(2));
const kWait = 20000;
const kXssName = '<img src=x onerror=alert(1)>';
const results = [];
const dialogs = [];
const consoleErrors = [];

async function check(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push({ name, ok: true });
    console.log(`PASS ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    results.push({ name, ok: false });
    console.log(`FAIL ${name}: ${e.stack ?? e}`);
  }
}

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

// Counts painted (non-white, non-transparent) pixels of a canvas.
async function paintedPixels(page, selector) {
  return page.evaluate((sel) => {
    let total = 0;
    for (const c of document.querySelectorAll(sel)) {
      if (!c.width || !c.height) continue;
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && (d[i] < 240 || d[i + 1] < 240 || d[i + 2] < 240)) total++;
    }
    return total;
  }, selector);
}

// Waits (bounded) until sweep `id` has finished; fails at once if it failed.
async function finished(id, what) {
  await until(`${what} finishes`, async () => {
    const s = await cluster.get(`/api/sweeps/${id}`);
    if (s.state === 'failed' || s.state === 'cancelled') throw new Error(`sweep ${s.state}: ${s.error}`);
    return s.state === 'finished';
  }, 90000, 250);
}

// Three noisy Gaussian classes in 4 features (2 informative), target last: the
// data of the Python command sweep. A fixed LCG, so every run sees the same rows.
function writeTabular(dir, sizes) {
  fs.mkdirSync(dir, { recursive: true });
  let state = 12345;
  const uniform = () => ((state = (state * 1103515245 + 12345) % 2147483648) + 0.5) / 2147483648;
  const gauss = () => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
  for (const [part, rows] of Object.entries(sizes)) {
    const lines = ['f0,f1,f2,f3,y'];
    for (let r = 0; r < rows; r++) {
      const y = r % 3;
      const x = [0, 1, 2, 3].map((f) => (f < 2 ? Math.cos(2.1 * y + f) * 1.2 : 0) + gauss());
      lines.push(`${x.map((v) => v.toFixed(5)).join(',')},${y}`);
    }
    fs.writeFileSync(path.join(dir, `${part}.csv`), lines.join('\n') + '\n');
  }
}

const cluster = new Cluster(opts);
let browser;
try {
  await cluster.start({ workers: 1, slots: 4 });
  console.log(`scheduler at ${cluster.api}, artifacts in ${opts.artifacts}`);
  browser = await launchChromium();
  const page = await browser.context.newPage();
  page.setDefaultTimeout(kWait);
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    d.dismiss().catch(() => {});
  });
  page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  const shot = (name) => page.screenshot({ path: path.join(opts.artifacts, `${name}.png`), fullPage: true });
  const base = cluster.api;

  let sweepId = '';
  await check('dashboard served with a strict CSP', async () => {
    const r = await page.goto(`${base}/`);
    assert(r.ok(), `GET / -> ${r.status()}`);
    const csp = (await r.allHeaders())['content-security-policy'] ?? '';
    assert(csp.includes("script-src 'self'") && !csp.includes('unsafe'), `CSP: ${csp}`);
    await page.locator('#sweeps').waitFor();
    await page.locator('#live-status.live-live').waitFor();
  });

  await check('submit a sweep from the UI and see it in the sweeps list', async () => {
    await page.goto(`${base}/#/submit`);
    await page.fill('#submit-token', cluster.token);
    const spec = syntheticSpec('browser-e2e', {
      search: { max_trials: 16, max_concurrent: 4 },
      trial: { sleep_s: 1.0, steps: 5 },
      early_stopping: { type: 'median', warmup_steps: 2, min_trials: 5 },
    });
    await page.fill('#spec-editor', JSON.stringify(spec, null, 2));
    await page.click('#submit-spec');
    const link = page.locator('#submit-ok a');
    await link.waitFor();
    sweepId = (await link.textContent()).trim();
    assert(sweepId, 'no sweep id');
    await shot('01-submit-ok');
    await page.goto(`${base}/#/`);
    const row = page.locator(`#sweeps tr[data-sweep="${sweepId}"]`);
    await row.waitFor();
    assert((await row.locator('.sweep-name').textContent()) === 'browser-e2e', 'name not shown');
    await shot('02-sweeps');
  });

  await check('finished trials appear on the sweep page without a reload', async () => {
    await page.goto(`${base}/#/sweeps/${encodeURIComponent(sweepId)}`);
    await page.waitForFunction(() => document.body.dataset.sweepRendered !== undefined);
    await page.evaluate(() => (window.__noReload = 'still here'));
    const finishedIn = () =>
      page.evaluate(() => document.querySelectorAll('#trial-table .vt-row .badge.st-completed, #trial-table .vt-row .badge.st-pruned').length);
    const initial = await finishedIn();
    await page.waitForFunction(
      (n) => document.querySelectorAll('#trial-table .vt-row .badge.st-completed, #trial-table .vt-row .badge.st-pruned').length > n,
      initial,
      { timeout: kWait },
    );
    // The whole sweep finishes; the header follows live too.
    await page.waitForFunction(() => document.querySelector('.sweep-head .badge')?.textContent === 'finished', null, { timeout: 30000 });
    await page.waitForFunction(() => document.querySelectorAll('#trial-table .vt-row .badge.st-completed, #trial-table .vt-row .badge.st-pruned').length === 16, null, { timeout: kWait });
    assert((await page.evaluate(() => window.__noReload)) === 'still here', 'the page reloaded');
    console.log(`  finished rows at first render: ${initial}, at the end: 16`);
  });

  await check('charts render (history, parallel coordinates, scatter, curves, importance)', async () => {
    for (const sel of ['#chart-history canvas', '#chart-parcoords', '#chart-scatter canvas', '#chart-curves canvas']) {
      await page.locator(sel).first().waitFor();
      const px = await paintedPixels(page, sel);
      assert(px > 500, `${sel}: only ${px} painted pixels`);
    }
    const lines = Number(await page.getAttribute('#chart-parcoords', 'data-lines'));
    assert(lines > 0, 'parallel coordinates drew no lines');
    assert((await page.locator('#importance .imp-row').count()) === 2, 'importance rows');
    assert(JSON.parse(await page.locator('#sweep-spec').textContent()).trial.function === 'branin', 'spec panel');
    // Sorting the table by value puts the best trial first.
    await page.click('.vt-th[data-key="value"]');
    const best = await page.evaluate(() => fetch(`/api/sweeps/${document.querySelector('#sweep-name') && location.hash.split('/')[2]}`).then((r) => r.json()));
    const firstNumber = await page.locator('#trial-table .vt-row').first().locator('.vt-td').first().textContent();
    assert(best.best && String(best.best.number) === firstNumber.trim(), `first row #${firstNumber}, best #${best.best?.number}`);
    await page.click('.vt-th[data-key="number"]');
    await shot('03-sweep');
  });

  await check('trial page shows params, attempts and the curve', async () => {
    await page.locator('#trial-table .vt-row a').first().click();
    await page.locator('#trial-params').waitFor();
    assert((await page.locator('#trial-params tr').count()) === 2, 'params x1, x2');
    assert((await page.locator('#trial-attempts tbody tr').count()) >= 1, 'attempts');
    await page.locator('#chart-trial canvas').first().waitFor();
    await shot('04-trial');
  });

  await check('ensemble panel: a real ensemble of a Python command sweep, its candidates and the choice', async () => {
    // A real sweep end to end: examples/python/softmax_trial.py (standard library
    // only) searched, then 3 bagged members; the record is the scheduler's own.
    const data = path.join(cluster.home, 'ens');
    writeTabular(data, { train: 300, validation: 120, test: 120 });
    const spec = {
      name: 'browser-ensemble',
      objective: { metric: 'val_loss', mode: 'min' },
      parameters: { lr: { type: 'float', min: 0.01, max: 0.3, log: true } },
      search: { algorithm: 'random', max_trials: 3, max_concurrent: 3, seed: 1 },
      trial: {
        kind: 'command',
        argv: ['/usr/bin/python3', path.join(repoRoot, 'examples/python/softmax_trial.py'),
          `${data}/train.csv`, `${data}/validation.csv`, `${data}/test.csv`, '3', '4'],
        data: { task: 'classification', classes: 3, train_rows: 300, validation_rows: 120, test_rows: 120, features: 4 },
        timeout_s: 60,
      },
      ensemble: { members: 3, max_features: 0.75, seed: 2 },
    };
    const { id } = await cluster.post('/api/sweeps', spec);
    await finished(id, 'the ensemble sweep');
    const record = await cluster.get(`/api/sweeps/${id}/ensemble`);
    await page.goto(`${base}/#/sweeps/${encodeURIComponent(id)}`);
    await page.locator('#ensemble-candidates').waitFor();
    assert(await page.locator('#ensemble').isVisible(), 'panel hidden');
    assert((await page.locator('#ensemble-candidates tbody tr').count()) === record.candidates.length, 'one row per candidate');
    const chosen = page.locator('#ensemble-candidates tbody tr.chosen');
    assert((await chosen.count()) === 1, 'exactly one chosen candidate');
    assert((await chosen.locator('th').textContent()).startsWith(record.chosen), `chosen row is not ${record.chosen}`);
    assert((await page.locator('#ensemble-choice').textContent()).includes(record.chosen), 'the choice is stated');
    assert((await page.locator('#ensemble-choice').textContent()).includes(record.decision.reason), 'the reason for the choice is stated');
    assert((await page.locator('#ensemble-compare tbody tr').count()) === 4, 'ensemble/best/mean/oob rows');
    assert((await page.locator('#ensemble-members tbody tr').count()) === 3, 'member rows');
    assert((await page.locator('#ensemble-models tbody tr').count()) === record.members.length, 'model rows (members + trials)');
    const features = await page.locator('#ensemble-models tbody tr td.features').allTextContents();
    assert(features.filter((f) => f === '3 of 4').length === 3, `member feature subsets: ${features}`);
    await page.locator('#ensemble').screenshot({ path: path.join(opts.artifacts, '05b-ensemble.png') });
    await page.goto(`${base}/#/sweeps/${encodeURIComponent(sweepId)}`);
    await page.waitForFunction(() => document.body.dataset.sweepRendered !== undefined);
    assert(await page.locator('#ensemble').isHidden(), 'the ensemble panel shows for a sweep without members');
  });

  await check('Pareto panel: a sweep over two objectives shows its trials and front', async () => {
    const params = {};
    for (let i = 1; i <= 6; i++) params[`x${i}`] = { type: 'float', min: 0, max: 1 };
    const spec = {
      name: 'browser-pareto',
      objectives: [{ metric: 'f1', reference: 1.1 }, { metric: 'f2', reference: 1.1 }],
      parameters: params,
      search: { algorithm: 'bayesian', max_trials: 16, max_concurrent: 2, seed: 3 },
      trial: { kind: 'synthetic', function: 'zdt1' },
    };
    const { id } = await cluster.post('/api/sweeps', spec);
    await finished(id, 'the Pareto sweep');
    const front = await cluster.get(`/api/sweeps/${id}/pareto`);
    await page.goto(`${base}/#/sweeps/${encodeURIComponent(id)}`);
    const want = `${front.front.length} on the front of 16 counted trials`;
    await page.waitForFunction((w) => (document.querySelector('#pareto-note')?.textContent ?? '').includes(w), want).catch(async (e) => {
      throw new Error(`${e.message}; the note reads "${await page.locator('#pareto-note').textContent()}", wanted "${want}"`);
    });
    assert(await page.locator('#panel-pareto').isVisible(), 'panel hidden');
    assert((await page.locator('#pareto-x option').count()) === 2, 'one x choice per objective');
    const px = await paintedPixels(page, '#chart-pareto canvas');
    assert(px > 500, `#chart-pareto: only ${px} painted pixels`);
    await page.locator('#panel-pareto').screenshot({ path: path.join(opts.artifacts, '05c-pareto.png') });
    await page.goto(`${base}/#/sweeps/${encodeURIComponent(sweepId)}`);
    await page.waitForFunction(() => document.body.dataset.sweepRendered !== undefined);
    assert(await page.locator('#panel-pareto').isHidden(), 'the Pareto panel shows for a sweep with one objective');
  });

  await check('Lineage panel: a PBT sweep draws its members and exploits', async () => {
    const spec = {
      name: 'browser-pbt',
      objective: { metric: 'value', mode: 'min' },
      parameters: { lr: { type: 'float', min: 0.001, max: 0.5, log: true } },
      search: { algorithm: 'random', max_trials: 40, max_concurrent: 2, seed: 2, pbt: { population: 4, resource: 'steps', interval: 5, max: 20 } },
      trial: { kind: 'synthetic', function: 'noisy_quadratic' },
    };
    const { id } = await cluster.post('/api/sweeps', spec);
    await finished(id, 'the PBT sweep');
    const page1 = await cluster.get(`/api/sweeps/${id}/trials?limit=100`);
    const exploits = page1.trials.filter((t) => t.extra && t.extra.exploited).length;
    await page.goto(`${base}/#/sweeps/${encodeURIComponent(id)}`);
    const want = `4 members, 16 completed intervals · ${exploits} exploits`;
    await page.waitForFunction((w) => (document.querySelector('#lineage-note')?.textContent ?? '').includes(w), want).catch(async (e) => {
      throw new Error(`${e.message}; the note reads "${await page.locator('#lineage-note').textContent()}", wanted "${want}"`);
    });
    assert(await page.locator('#panel-lineage').isVisible(), 'panel hidden');
    const edges = Number(await page.locator('#chart-lineage').getAttribute('data-edges'));
    assert(edges === 12, `#chart-lineage: ${edges} edges, wanted 12 (4 members x 3 later intervals)`);
    const px = await paintedPixels(page, '#chart-lineage');
    assert(px > 500, `#chart-lineage: only ${px} painted pixels`);
    await page.locator('#panel-lineage').screenshot({ path: path.join(opts.artifacts, '05d-lineage.png') });
    await page.goto(`${base}/#/sweeps/${encodeURIComponent(sweepId)}`);
    await page.waitForFunction(() => document.body.dataset.sweepRendered !== undefined);
    assert(await page.locator('#panel-lineage').isHidden(), 'the Lineage panel shows for a sweep without a schedule');
  });

  await check('workers page lists the worker', async () => {
    await page.goto(`${base}/#/workers`);
    await page.locator('#workers tbody tr').first().waitFor();
    assert((await page.locator('#workers tbody tr td').first().textContent()) === 'browser-w0', 'worker name');
    const offered = await page.locator('#workers tbody tr td.offers').first().textContent();
    assert(offered.includes('fast-disk, zone=a') && offered.includes('cpus'), `offers: ${offered}`);
    await shot('05-workers');
  });

  await check('an invalid spec shows its field errors inline', async () => {
    await page.goto(`${base}/#/submit`);
    const bad = syntheticSpec('bad', { search: { max_trials: 0 } });
    bad.parameters.x1.type = 'floaty';
    await page.fill('#spec-editor', JSON.stringify(bad, null, 2));
    await page.click('#submit-spec');
    const e1 = page.locator('#field-errors li[data-path="search.max_trials"]');
    await e1.waitFor();
    const msg = (await e1.locator('.msg').textContent()).trim();
    assert(msg.length > 0, 'max_trials has no message');
    console.log(`  search.max_trials: ${msg}`);
    const e2 = page.locator('#field-errors li[data-path="parameters.x1.type"]');
    await e2.waitFor();
    assert((await e2.locator('.line').count()) === 1, 'no line for parameters.x1.type');
    assert((await page.locator('.gutter .ln.mark').count()) >= 2, 'gutter marks');
    await shot('06-invalid-spec');
  });

  await check('an XSS-named sweep renders as text and fires no dialog', async () => {
    const { id } = await cluster.post('/api/sweeps', syntheticSpec(kXssName, { search: { max_trials: 2, max_concurrent: 2 }, trial: { sleep_s: 0 } }));
    await page.goto(`${base}/#/`);
    const row = page.locator(`#sweeps tr[data-sweep="${id}"]`);
    await row.waitFor();
    assert((await row.locator('.sweep-name').textContent()) === kXssName, 'name not shown verbatim');
    assert((await page.locator('#sweeps img').count()) === 0, 'an <img> got into the list');
    await shot('07a-xss-list');
    await page.goto(`${base}/#/sweeps/${encodeURIComponent(id)}`);
    await page.waitForFunction((n) => document.querySelector('#sweep-name')?.textContent === n, kXssName);
    assert((await page.locator('main img').count()) === 0, 'an <img> got into the sweep page');
    await shot('07-xss');
    assert(dialogs.length === 0, `dialogs fired: ${dialogs.join(' | ')}`);
  });

  await check('cancel a sweep from the UI', async () => {
    const { id } = await cluster.post('/api/sweeps', syntheticSpec('to-cancel', { search: { max_trials: 50, max_concurrent: 2 }, trial: { sleep_s: 30 } }));
    await page.goto(`${base}/#/sweeps/${encodeURIComponent(id)}`);
    await page.locator('#cancel-sweep:not([disabled])').waitFor();
    await page.click('#cancel-sweep');
    await page.locator('#cancel-sweep', { hasText: 'Click again' }).waitFor();
    await page.click('#cancel-sweep');
    await page.waitForFunction(() => document.querySelector('.sweep-head .badge')?.textContent === 'cancelled', null, { timeout: kWait });
    await shot('08-cancelled');
  });

  // A worker on the stand-in NVML (tests/support/fake_nvml.cpp): one H100.
  // Two trials of gpus 0.5 share it; each tells the stand-in it holds
  // 2345 MB and 41 % (as a real trial's CUDA context would show in NVML).
  await check('packed GPU trials show what they used; the workers page each device', async () => {
    assert(opts.fakeNvml, 'no --fake-nvml DIR (the stand-in libnvidia-ml.so.1)');
    const nvml = path.join(cluster.home, 'nvml.txt');
    fs.writeFileSync(nvml, 'gpu GPU-0000-h100 81559 3000 37 NVIDIA H100 80GB HBM3\n');
    const program = path.join(cluster.home, 'gpu_trial.sh');
    fs.writeFileSync(program, `#!/bin/sh\necho "proc GPU-0000-h100 $$ 2345 41" >> '${nvml}'\nsleep 2.5\necho 'hpo-metric {"final": true, "value": 1}'\n`);
    cluster.spawnLogged('worker-gpu', opts.worker, [], {
      HPO_SLOTS: '4', HPO_WORKER_NAME: 'browser-gpu', HPO_TRIAL_USER: 'none', HPO_ANY_PROJECT_AS_WORKER: '1',
      HPO_TRIAL_NAMESPACES: 'off',
      LD_LIBRARY_PATH: opts.fakeNvml, HPO_FAKE_NVML_FILE: nvml,
    });
    const spec = {
      name: 'packed-gpu', objective: { metric: 'value', mode: 'min' },
      parameters: { x: { type: 'int', min: 0, max: 9 } },
      search: { algorithm: 'random', max_trials: 2, max_concurrent: 2, seed: 3 },
      trial: { kind: 'command', argv: ['/bin/sh', program], resources: { gpus: 0.5, gpu_model: 'H100' }, max_attempts: 1, timeout_s: 60 },
    };
    const r = await fetch(`${base}/api/sweeps`, {
      method: 'POST', headers: { Authorization: `Bearer ${cluster.token}`, 'Content-Type': 'application/json' }, body: JSON.stringify(spec),
    });
    const body = await r.text();
    assert(r.status === 201, `submit: ${r.status} ${body}`);
    const id = JSON.parse(body).id;
    await until('the packed GPU sweep finishes', async () => {
      const doc = await (await fetch(`${base}/api/sweeps/${id}`, { headers: { Authorization: `Bearer ${cluster.token}` } })).json();
      if (doc.state === 'failed' || doc.state === 'cancelled') throw new Error(`sweep ${doc.state}: ${doc.error}`);
      return doc.state === 'finished';
    }, 90000, 250);
    await page.goto(`${base}/#/sweeps/${encodeURIComponent(id)}`);
    await page.locator('#trial-table', { hasText: 'gpu.memory_peak_mb' }).waitFor();
    await shot('11-gpu-trials');
    await page.goto(`${base}/#/trials/${encodeURIComponent(id + '-0')}`);
    const metrics = page.locator('#trial-metrics');
    await metrics.waitFor();
    const text = await metrics.textContent();
    assert(/gpu\.memory_peak_mb\s*2,?345/.test(text), `trial metrics: ${text}`);
    assert(/gpu\.util_mean_pct\s*41/.test(text), `trial metrics: ${text}`);
    await page.goto(`${base}/#/workers`);
    await page.getByText('NVIDIA H100 80GB HBM3 · 3000/81559 MiB · 37%').waitFor();
    await shot('12-gpu-worker');
  });

  await check('a banner says when the service runs degraded (fewer Redis replicas than wanted)', async () => {
    assert(await page.locator('#degraded').isHidden(), 'a banner on a healthy service');
    const degraded = await cluster.startDegradedScheduler();
    await page.goto(`${degraded}/#/`);
    await page.locator('#degraded').waitFor({ state: 'visible' });
    const text = await page.locator('#degraded').textContent();
    assert(text.includes('0 of the 1 replicas') && text.includes('can lose'), `banner: ${text}`);
    await shot('09-degraded');
  });

  // Last: a second user makes every read need a token (the one-person install
  // reads without one on loopback). A fresh page asks for a token once, refuses
  // a wrong one, and then shows only what the user's projects hold.
  await check('with several users the dashboard asks for a token and shows only the user\'s projects', async () => {
    await cluster.post('/api/projects', { name: 'vision', max_slots: 3, max_gpus: 2, max_store_bytes: 1048576 });
    await cluster.post('/api/users', { name: 'ana' });
    const { token } = await cluster.post('/api/users/ana/tokens', { label: 'browser' });
    const put = await fetch(`${base}/api/projects/vision/members/ana`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${cluster.token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ role: 'member' }),
    });
    assert(put.ok, `PUT member: ${put.status}`);
    const fresh = await browser.context.newPage();
    fresh.setDefaultTimeout(kWait);
    fresh.on('pageerror', (e) => consoleErrors.push(String(e)));
    const urls = [];
    fresh.on('request', (r) => urls.push(r.url()));
    // The profile's storage holds the admin's token from the submit check: forget it.
    await fresh.goto(`${base}/#/`);
    await fresh.evaluate(() => localStorage.removeItem('hpo.token'));
    await fresh.reload();
    await fresh.locator('#sign-in').waitFor();
    assert((await fresh.locator('#sweeps').count()) === 0, 'the sweeps list showed without a token');
    await fresh.fill('#sign-in-token', 'hpo_' + '0'.repeat(64));
    await fresh.click('#sign-in-button');
    await fresh.locator('#sign-in-error', { hasText: 'refused' }).waitFor();
    await fresh.fill('#sign-in-token', token);
    await fresh.click('#sign-in-button');
    await fresh.locator('#projects tr[data-project="vision"]').waitFor();
    const names = await fresh.locator('#projects tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.project));
    assert(names.length === 1 && names[0] === 'vision', `projects shown: ${names.join(', ')}`);
    const gpus = (await fresh.locator('#projects tr[data-project="vision"] td.gpus').textContent()).trim();
    assert(gpus.startsWith('0') && gpus.endsWith('2'), `GPUs cell: ${gpus}`);
    const bytes = (await fresh.locator('#projects tr[data-project="vision"] td.store').textContent()).trim();
    assert(bytes === '0 B / 1 MiB', `store cell: ${bytes}`);
    assert((await fresh.locator('#who').textContent()) === 'ana', 'not signed in as ana');
    await fresh.locator('#live-status.live-live').waitFor();
    assert((await fresh.locator('#sweeps tbody tr').count()) === 0, 'another project\'s sweeps are listed');
    // Her live stream: opened with a one-time ticket, never her token in a URL;
    // her new sweep arrives on it without a reload.
    const submitted = await fetch(`${base}/api/sweeps?project=vision`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        name: 'ana live', objective: { metric: 'value', mode: 'min' },
        parameters: { x1: { type: 'float', min: -5, max: 10 }, x2: { type: 'float', min: 0, max: 15 } },
        search: { algorithm: 'random', max_trials: 2 }, trial: { kind: 'synthetic', function: 'branin' },
      }),
    });
    assert(submitted.status === 201, `submit as ana: ${submitted.status}`);
    await fresh.locator('#sweeps tbody tr').first().waitFor();
    assert(urls.some((u) => /\/api\/events\?ticket=[0-9a-f]{64}/.test(u)), `no stream opened with a ticket: ${urls.filter((u) => u.includes('/api/events')).join(', ')}`);
    assert(!urls.some((u) => u.includes(token) || u.includes('access_token')), 'a token went into a URL');
    await fresh.screenshot({ path: path.join(opts.artifacts, '10-signed-in.png'), fullPage: true });
    await fresh.close();
  });

  await check('no page errors, CSP violations or dialogs', async () => {
    assert(dialogs.length === 0, `dialogs: ${dialogs.join(' | ')}`);
    const bad = consoleErrors.filter((m) => !/401|Failed to load resource.*\b(400|401)\b/.test(m));
    assert(bad.length === 0, `console errors:\n  ${bad.join('\n  ')}`);
  });
} catch (e) {
  results.push({ name: 'setup', ok: false });
  console.log(`FAIL setup: ${e.stack ?? e}`);
} finally {
  await browser?.close();
  await cluster.stop();
}

const failed = results.filter((r) => !r.ok);
console.log(`${results.length - failed.length}/${results.length} browser checks passed; screenshots in ${opts.artifacts}`);
process.exit(failed.length || !results.length ? 1 : 0);
