// Dashboard benchmark: a sweep with N (10,000) finished synthetic trials on a
// real hpo-scheduler + hpo-workers, then
//   1. a page of trials over REST: GET /api/sweeps/{id}/trials?limit=100,
//      20 times; the median wall time at the client (loopback) and the mean
//      at the server (from the scheduler's own latency histogram, /metrics);
//      the same for a sorted page (?sort=-value, which reads every trial);
//   2. the sweep page's first complete render in headless Chromium: from
//      navigation start to the 'hpo-sweep-rendered' mark (header, 10,000-row
//      table, history, parallel coordinates, scatter, importance drawn),
//      one cold load and the median of 5 more, with the page's own measures
//      of each phase.
// Each figure is printed beside its budget as a ratio: issue 6's (100 ms,
// 1.5 s) for 10,000 trials, issue 13's 2 s for the page of a bigger sweep.
//
//   node tests/bench/ui_bench.mjs --scheduler BIN --worker BIN [--trials N]
import { Cluster, launchChromium, parseArgs, until } from '../browser/harness.mjs';

const opts = parseArgs(process.argv.slice(2));
const nTrials = Number(process.argv[process.argv.indexOf('--trials') + 1] || 0) || 10000;
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function serverLatency(cluster, route) {
  const text = await (await fetch(`${cluster.api}/metrics`)).text();
  const pick = (what) => {
    const re = new RegExp(`^hpo_http_request_duration_seconds_${what}\\{method="GET",route="${route.replace(/[{}]/g, '\\$&')}"\\} (\\S+)$`, 'm');
    const m = re.exec(text);
    return m ? Number(m[1]) : 0;
  };
  return { sum: pick('sum'), count: pick('count') };
}

async function restPage(cluster, id, query) {
  const route = '/api/sweeps/{id}/trials';
  const before = await serverLatency(cluster, route);
  const times = [];
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    const r = await fetch(`${cluster.api}/api/sweeps/${id}/trials?${query}`);
    const j = await r.json();
    times.push(performance.now() - t0);
    if (j.trials.length !== 100) throw new Error(`page of ${j.trials.length}`);
  }
  const after = await serverLatency(cluster, route);
  const server = after.count > before.count ? ((after.sum - before.sum) / (after.count - before.count)) * 1000 : NaN;
  return { client: median(times), server };
}

const cluster = new Cluster(opts);
let browser;
try {
  const workers = Number(opts.workers ?? 4);
  const slots = Number(opts.slots ?? 32);
  await cluster.start({ workers, slots });
  const t0 = performance.now();
  const { id } = await cluster.post('/api/sweeps', {
    name: 'ui-bench',
    objective: { metric: 'value', mode: 'min' },
    parameters: { x1: { type: 'float', min: -5, max: 10 }, x2: { type: 'float', min: 0, max: 15 } },
    search: { algorithm: 'random', max_trials: nTrials, max_concurrent: workers * slots, seed: 3 },
    trial: { kind: 'synthetic', function: 'branin', sleep_s: 0 },
  });
  await until(
    `${nTrials} finished trials`,
    async () => (await cluster.get(`/api/sweeps/${id}`)).state === 'finished',
    600000,
    500,
  );
  const fill = (performance.now() - t0) / 1000;
  const sweep = await cluster.get(`/api/sweeps/${id}`);
  console.log(`filled: ${sweep.counts.completed} completed trials in ${fill.toFixed(1)} s (${workers} workers x ${slots} slots)`);

  const plain = await restPage(cluster, id, `limit=100&offset=${Math.floor(nTrials / 2)}`);
  const sorted = await restPage(cluster, id, 'limit=100&sort=-value');

  browser = await launchChromium();
  const renders = [];
  const loads = [];
  const phases = {};
  for (let i = 0; i < 6; i++) {
    const page = await browser.context.newPage();
    await page.goto(`${cluster.api}/#/sweeps/${id}`);
    await page.waitForFunction(() => document.body.dataset.sweepRendered !== undefined, null, { timeout: 60000 });
    const [data, ms] = await page.evaluate(() => ['hpo-sweep-data', 'hpo-sweep-rendered'].map((n) => performance.getEntriesByName(n)[0].startTime));
    loads.push(data);
    for (const [name, d] of await page.evaluate(() => performance.getEntriesByType('measure').map((m) => [m.name, m.duration])))
      (phases[name] ??= []).push(d);
    const rows = await page.evaluate(() => document.body.dataset.sweepRendered);
    if (Number(rows) !== nTrials) throw new Error(`rendered ${rows} trials`);
    renders.push(ms);
    await page.close();
  }
  const warm = median(renders.slice(1));
  const warmData = median(loads.slice(1));
  const f = (x) => x.toFixed(1).padStart(8);
  console.log(`\n${nTrials} finished trials                        measured    budget   ratio`);
  console.log(`REST page limit=100 (client median of 20)  ${f(plain.client)} ms   100 ms   ${(plain.client / 100).toFixed(3)}`);
  console.log(`REST page limit=100 (server mean of 20)    ${f(plain.server)} ms   100 ms   ${(plain.server / 100).toFixed(3)}`);
  console.log(`REST page sort=-value (client median)      ${f(sorted.client)} ms   100 ms   ${(sorted.client / 100).toFixed(3)}`);
  console.log(`REST page sort=-value (server mean)        ${f(sorted.server)} ms   100 ms   ${(sorted.server / 100).toFixed(3)}`);
  // Issue 6's budget for 10,000 trials; issue 13's for 100,000.
  const budget = nTrials > 10000 ? 2000 : 1500;
  console.log(`sweep page first render, cold load         ${f(renders[0])} ms  ${budget} ms   ${(renders[0] / budget).toFixed(3)}`);
  console.log(`sweep page first render, median of 5       ${f(warm)} ms  ${budget} ms   ${(warm / budget).toFixed(3)}`);
  console.log(`  of which every trial loaded at           ${f(warmData)} ms (median), drawing ${f(warm - warmData)} ms`);
  // The page's own measures of its first render (median of the 5): columns
  // to trial objects, then each panel; the rest of the drawing is uPlot's and
  // the canvases' own work before the next frame.
  for (const [name, ds] of Object.entries(phases))
    console.log(`  ${name.replace(/^hpo-/, '').padEnd(40)} ${f(median(ds.slice(1)))} ms`);
  console.log(`load average during the run: ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')} (cores: ${(await import('node:os')).cpus().length})`);
} finally {
  await browser?.close();
  await cluster.stop();
}
