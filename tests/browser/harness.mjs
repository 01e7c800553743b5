// Shared by the browser test and the UI benchmark: starts a real hpo-scheduler
// (embedded Redis, fresh HPO_HOME, port 0) and hpo-worker, reads the API URL
// and token from $HPO_HOME/scheduler.json, and launches Debian's Chromium
// through playwright-core (resolved from web/ui/node_modules: one lockfile).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const uiDir = path.join(repoRoot, 'web/ui');

export function loadPlaywright() {
  const require = createRequire(path.join(uiDir, 'package.json'));
  return require('playwright-core');
}

// Flags: --scheduler PATH --worker PATH --artifacts DIR (or HPO_SCHEDULER_BIN,
// HPO_WORKER_BIN, HPO_ARTIFACTS).
export function parseArgs(argv) {
  const out = {
    scheduler: process.env.HPO_SCHEDULER_BIN,
    worker: process.env.HPO_WORKER_BIN,
    artifacts: process.env.HPO_ARTIFACTS,
  };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(scheduler|worker|artifacts|slots|workers|fake-nvml)$/.exec(argv[i]);
    if (m) out[m[1] === 'fake-nvml' ? 'fakeNvml' : m[1]] = argv[++i];
  }
  if (!out.scheduler || !out.worker) throw new Error('need --scheduler PATH and --worker PATH');
  out.artifacts ??= fs.mkdtempSync(path.join(os.tmpdir(), 'hpo-browser-artifacts-'));
  fs.mkdirSync(out.artifacts, { recursive: true });
  return out;
}

// Bounded polling: calls fn until it returns a truthy value or the deadline passes.
export async function until(what, fn, timeoutMs = 20000, stepMs = 50) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

export class Cluster {
  constructor(opts) {
    this.opts = opts;
    this.procs = [];
    this.home = fs.mkdtempSync(path.join(os.tmpdir(), 'hpo-browser-home-'));
  }

  spawnLogged(name, bin, args, extraEnv = {}) {
    const log = fs.openSync(path.join(this.opts.artifacts, `${name}.log`), 'w');
    const p = spawn(bin, args, {
      env: { ...process.env, HPO_HOME: this.home, ...extraEnv },
      stdio: ['ignore', log, log],
    });
    p.exitCodeSeen = null;
    p.on('exit', (code, sig) => (p.exitCodeSeen = code ?? sig));
    this.procs.push({ name, p });
    return p;
  }

  async start({ workers = 1, slots = 4 } = {}) {
    const staticDir = path.join(uiDir, 'dist');
    if (!fs.existsSync(path.join(staticDir, 'index.html'))) throw new Error(`no dashboard build at ${staticDir} (run scripts/build-ui.sh)`);
    const sched = this.spawnLogged('scheduler', this.opts.scheduler, ['--listen', '127.0.0.1:0', '--static-dir', staticDir]);
    const state = await until(
      'scheduler.json',
      () => {
        if (sched.exitCodeSeen !== null) throw new Error(`hpo-scheduler exited (${sched.exitCodeSeen})`);
        const f = path.join(this.home, 'scheduler.json');
        if (!fs.existsSync(f)) return null;
        const j = JSON.parse(fs.readFileSync(f, 'utf8'));
        return j.api && j.token ? j : null;
      },
      30000,
    );
    this.api = state.api.replace(/\/$/, '');
    this.token = state.token;
    await until('scheduler /healthz', async () => (await fetch(`${this.api}/healthz`)).ok, 20000);
    for (let i = 0; i < workers; i++)
      // The trials read the test's own files in HPO_HOME (0700): they run as the worker,
      // in its namespaces.
      this.spawnLogged(`worker${i}`, this.opts.worker, [], { HPO_SLOTS: String(slots), HPO_WORKER_NAME: `browser-w${i}`, HPO_LABELS: 'zone=a,fast-disk', HPO_TRIAL_USER: 'none', HPO_ANY_PROJECT_AS_WORKER: '1', HPO_TRIAL_NAMESPACES: 'off' });
    await until(
      `${workers} worker(s) registered`,
      async () => (await (await fetch(`${this.api}/api/workers`)).json()).workers.length >= workers,
      20000,
    );
  }

  // A second scheduler (its own HPO_HOME) on the same embedded Redis, whose
  // acknowledged writes want one replica that Redis does not have: it runs
  // degraded (missing_replicas=continue). Returns its API URL.
  async startDegradedScheduler() {
    const state = JSON.parse(fs.readFileSync(path.join(this.home, 'scheduler.json'), 'utf8'));
    const port = new URL(state.redis).port;
    const conf = fs.readFileSync(path.join(this.home, 'data', 'redis.conf'), 'utf8');
    const password = /^user hpo-scheduler on >(\S+)/m.exec(conf)?.[1];
    if (!password) throw new Error('no hpo-scheduler user in the embedded redis.conf');
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hpo-browser-degraded-'));
    this.extraHomes = [...(this.extraHomes ?? []), home];
    const url = `redis://hpo-scheduler:${password}@127.0.0.1:${port}?replicas=1&replica_timeout_ms=100`;
    const p = this.spawnLogged('scheduler', this.opts.scheduler,
      ['--listen', '127.0.0.1:0', '--static-dir', path.join(uiDir, 'dist')],
      { HPO_HOME: home, HPO_REDIS: url });
    const st = await until('the degraded scheduler.json', () => {
      if (p.exitCodeSeen !== null) throw new Error(`hpo-scheduler exited (${p.exitCodeSeen})`);
      const f = path.join(home, 'scheduler.json');
      return fs.existsSync(f) ? JSON.parse(fs.readFileSync(f, 'utf8')) : null;
    }, 30000);
    return st.api.replace(/\/$/, '');
  }

  async post(p, body) {
    const r = await fetch(`${this.api}${p}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${this.token}`, 'Content-Type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const j = await r.json();
    if (!r.ok) throw new Error(`POST ${p}: ${r.status} ${JSON.stringify(j)}`);
    return j;
  }

  async get(p) {
    const r = await fetch(`${this.api}${p}`);
    if (!r.ok) throw new Error(`GET ${p}: ${r.status}`);
    return r.json();
  }

  async stop() {
    // Workers first (they finish or hand back their trials), then the scheduler.
    for (const group of [this.procs.filter((x) => x.name !== 'scheduler'), this.procs.filter((x) => x.name === 'scheduler')]) {
      for (const { p } of group) if (p.exitCodeSeen === null) p.kill('SIGTERM');
      for (const { p } of group)
        await until('process exit', () => p.exitCodeSeen !== null, 10000).catch(() => p.kill('SIGKILL'));
    }
    fs.rmSync(this.home, { recursive: true, force: true });
    for (const h of this.extraHomes ?? []) fs.rmSync(h, { recursive: true, force: true });
  }
}

export const kChromiumArgs = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

// A headless Chromium with a fresh profile; returns {context, close}.
export async function launchChromium(opts) {
  const { chromium } = loadPlaywright();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'hpo-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: kChromiumArgs,
    viewport: { width: 1400, height: 1000 },
    ...opts,
  });
  return {
    context,
    close: async () => {
      await context.close().catch(() => {});
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

export function syntheticSpec(name, over = {}) {
  return {
    name,
    objective: { metric: 'value', mode: 'min' },
    parameters: { x1: { type: 'float', min: -5, max: 10 }, x2: { type: 'float', min: 0, max: 15 } },
    search: { algorithm: 'random', max_trials: 16, max_concurrent: 4, seed: 7, ...(over.search ?? {}) },
    ...(over.early_stopping ? { early_stopping: over.early_stopping } : {}),
    trial: { kind: 'synthetic', function: 'branin', sleep_s: 0.3, ...(over.trial ?? {}) },
  };
}
