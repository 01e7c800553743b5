// The REST client: typed views of the documents in web/json_codec.hpp.
// Reads are open; mutating calls carry the bearer token the user typed once
// (kept in localStorage under "hpo.token").

export type ParamValue = number | string | boolean | null;
export type Params = Record<string, ParamValue>;
export type Metrics = Record<string, number | null>;

export interface Counts {
  queued: number;
  running: number;
  completed: number;
  failed: number;
  pruned: number;
  cancelled: number;
}

export interface Best {
  trial_id: string;
  number: number;
  params: Params;
  value: number | null;
}

// GET /api/projects: a project the caller may read, what it holds and may hold
// (0: no limit), and the caller's role in it.
export interface Project {
  name: string;
  weight: number;
  created_ms: number;
  limits: {
    max_slots: number;
    max_queued_trials: number;
    max_active_sweeps: number;
    max_gpus: number;
    max_store_bytes?: number;
    max_file_bytes?: number;
  };
  use: { slots: number; queued_trials: number; active_sweeps: number; gpus: number; store_bytes?: number; file_bytes?: number };
  // The byte limits in force: its own, else the scheduler's default (0: none).
  byte_limits?: { store_bytes: number; file_bytes: number };
  role: 'viewer' | 'member' | 'admin' | null;
}

export interface Sweep {
  id: string;
  name: string;
  project?: string;
  owner?: string;
  tags?: string[];
  note?: string;
  state: string;
  stage: string;
  objective: { metric: string; mode: 'min' | 'max' };
  counts: Counts;
  member_counts: Counts;
  best: Best | null;
  max_trials: number;
  next_number?: number;
  next_member?: number;
  created_ms: number;
  finished_ms: number;
  error: string;
  unschedulable?: string;
  spec: unknown;
  [extra: string]: unknown;
}

// GET /api/sweeps/{id}/pareto: the front of a sweep with several objectives.
export interface ParetoFront {
  objectives: { metric: string; mode: 'min' | 'max' }[];
  reference: (number | null)[];
  hypervolume: number | null;
  counted: number;
  front: { trial_id: string; number: number; params: Params; values: Record<string, number | null> }[];
}

export interface Trial {
  id: string;
  sweep_id: string;
  number: number;
  kind: string;
  state: string;
  params: Params;
  value: number | null;
  attempt: number;
  max_attempts: number;
  slots: number;
  worker: string;
  metrics: Metrics;
  error: string;
  control: string;
  created_ms: number;
  started_ms: number;
  finished_ms: number;
  extra: unknown;
}

export interface Attempt {
  attempt: number;
  worker: string;
  started_ms: number;
  ended_ms: number;
  outcome: string;
  error: string;
}

export interface Report {
  step: number;
  metrics: Metrics;
  time_ms: number;
}

export interface TrialDetail extends Trial {
  attempts: Attempt[];
  reports: Report[];
  log_tail?: string | null; // the latest attempt's output tail, kept by the worker
}

export interface Gpu {
  index: number;
  name: string;
  memory_total_mb: number;
  memory_used_mb: number;
  utilization_pct: number;
  uuid?: string; // GPU-... or, for a MIG instance, MIG-...
}

export interface Worker {
  name: string;
  host: string;
  slots: number;
  busy_slots: number;
  trials: string[];
  gpus: Gpu[];
  last_heartbeat_ms: number;
  started_ms: number;
  // What it offers to trials' resources requests (trials/placement.hpp).
  torch?: boolean;
  cuda?: boolean;
  cpus?: number;
  memory_gb?: number;
  labels?: Record<string, string>;
}

// Scores of one model on the validation and test rows (scheduler/ensemble_stage.cpp).
export type Scores = Partial<Record<'accuracy' | 'log_loss' | 'mse' | 'rmse', number>>;
export interface ScoreSummary {
  validation?: Scores;
  test?: Scores;
}

export interface EnsembleCandidate {
  name: string;
  detail?: string;
  cross_validated?: boolean;
  cv_loss?: number;
  cv_accuracy?: number;
  validation?: Scores;
  test?: Scores;
  weights?: Record<string, number>;
  untrusted?: string;
}

export interface Advantage {
  mean: number;
  se: number;
  rows: number;
}

// Why the chosen candidate: the comparison with the best single model (the
// sweep's best trial by its objective).
export interface EnsembleDecision {
  best_single?: string;
  objective?: { metric: string; scored_as: string; stand_in: boolean };
  chosen?: string;
  compared?: string | null;
  decided?: boolean;
  reason?: string;
  validation_rows?: number;
  oob_rows?: number;
  loss_advantage?: Advantage;
  objective_advantage?: Advantage;
  noise?: number;
  test_advantage?: Advantage;
}

export interface EnsembleRecord {
  task?: string;
  combine?: string;
  method?: string;
  chosen?: string;
  choose?: string;
  n_features?: number;
  candidates?: EnsembleCandidate[];
  warnings?: string[];
  decision?: EnsembleDecision;
  members?: { trial_id: string; kind: string; weight: number; features?: number[]; params?: Params; metrics?: ScoreSummary }[];
  ensemble?: ScoreSummary;
  best_single?: ScoreSummary & { trial_id?: string };
  mean_member?: ScoreSummary;
  oob?: { rows_total: number; rows_covered: number; scores?: Scores };
  members_requested?: number;
  members_completed?: number;
  members_failed?: unknown[];
}

export interface FieldError {
  path: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: FieldError[],
  ) {
    super(message);
  }
}

const kTokenKey = 'hpo.token';

// Set when a read was refused: the event stream is then opened with a
// one-time ticket (EventSource cannot send headers; a token never goes into a URL).
export let readsNeedToken = false;

// Called when a read is refused for want of a (valid) token: the shell asks
// for one (main.ts).
const signInListeners: ((why: string) => void)[] = [];
export function onSignInNeeded(cb: (why: string) => void): void {
  signInListeners.push(cb);
}

export function getToken(): string {
  try {
    return localStorage.getItem(kTokenKey) ?? '';
  } catch {
    return '';
  }
}

export function setToken(token: string): void {
  try {
    if (token) localStorage.setItem(kTokenKey, token);
    else localStorage.removeItem(kTokenKey);
  } catch {
    /* storage disabled: the token lives for this page only */
  }
}

async function request<T>(method: string, path: string, body?: string): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  // The token goes on every call when known: a scheduler with auth_reads
  // needs it for reads too (and ignores it on reads otherwise).
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, { method, headers, body });
  const text = await res.text();
  let doc: unknown = null;
  try {
    doc = text ? JSON.parse(text) : null;
  } catch {
    doc = null;
  }
  if (!res.ok) {
    const e = (doc as { error?: { code?: string; message?: string; fields?: FieldError[] } } | null)
      ?.error;
    if (res.status === 401 && method === 'GET') {
      readsNeedToken = true;
      for (const cb of signInListeners) cb(e?.message ?? 'This service shows its sweeps to signed-in users.');
    }
    throw new ApiError(res.status, e?.code ?? 'http_' + res.status, e?.message ?? text, e?.fields ?? []);
  }
  return doc as T;
}

const enc = encodeURIComponent;

// A ticket that opens one event stream as the signed-in user, once, within a minute.
export async function streamTicket(): Promise<string> {
  const r = await request<{ ticket: string }>('POST', '/api/events/ticket');
  return r.ticket;
}

export const api = {
  sweeps: (offset = 0, limit = 100, project = '', tag = '') =>
    request<{ sweeps: Sweep[] }>(
      'GET',
      `/api/sweeps?offset=${offset}&limit=${limit}${project ? `&project=${encodeURIComponent(project)}` : ''}${tag ? `&tag=${encodeURIComponent(tag)}` : ''}`,
    ),
  projects: () => request<{ projects: Project[] }>('GET', '/api/projects'),
  whoami: () => request<WhoAmI>('GET', '/api/whoami'),
  sweep: (id: string) => request<Sweep>('GET', `/api/sweeps/${enc(id)}`),
  trials: (id: string, q: { offset?: number; limit?: number; state?: string; sort?: string; kind?: string }) => {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== '') p.set(k, String(v));
    return request<{ trials: Trial[]; total: number }>('GET', `/api/sweeps/${enc(id)}/trials?${p}`);
  },
  ensemble: (id: string) => request<EnsembleRecord>('GET', `/api/sweeps/${enc(id)}/ensemble`),
  pareto: (id: string) => request<ParetoFront>('GET', `/api/sweeps/${enc(id)}/pareto`),
  trial: (id: string) => request<TrialDetail>('GET', `/api/trials/${enc(id)}`),
  workers: () => request<{ workers: Worker[] }>('GET', '/api/workers'),
  submit: (specText: string, project = '') =>
    request<{ id: string }>('POST', `/api/sweeps${project ? `?project=${encodeURIComponent(project)}` : ''}`, specText),
  cancel: (id: string) => request<Sweep>('POST', `/api/sweeps/${enc(id)}/cancel`),
  health: () => request<Health>('GET', '/healthz'),
};

// GET /api/whoami: the token's user (null: anonymous) and roles by project.
export interface WhoAmI {
  user: string | null;
  service_admin: boolean;
  reads_everything: boolean;
  roles: Record<string, string>;
}

// GET /healthz: "degraded" when Redis has fewer replicas than acknowledged
// writes wait for (the message says what that means).
export interface Health {
  status: 'ok' | 'degraded';
  degraded?: string;
  replication?: { replicas: number; wanted: number; missing_replicas: string };
}

// The trials of a sweep in columns (GET .../trials?format=columns): one array
// per field, states/workers/errors as indexes into `dictionaries`, null where
// a trial has no such parameter or metric.
export interface TrialColumns {
  total: number;
  count: number;
  columns: {
    id: string[];
    number: number[];
    state: number[];
    value: (number | null)[];
    attempt: number[];
    worker: number[];
    error: number[];
    created_ms: number[];
    started_ms: number[];
    finished_ms: number[];
    // Sweeps with search.multi_fidelity or search.pbt: each trial's place in the schedule.
    extra?: (Record<string, unknown> | null)[];
  };
  dictionaries: { state: string[]; worker: string[]; error: string[] };
  params: Record<string, ParamValue[]>;
  metrics: Record<string, (number | null)[]>;
}

// Trial objects from the columns. The fields the columns leave out (retry
// budget, slots, control; extra but for schedules) are not shown by the table or the charts;
// they are filled with neutral values and a trial's own page reads them.
export function fromColumns(c: TrialColumns, sweepId: string, kind: string): Trial[] {
  const col = c.columns;
  const d = c.dictionaries;
  const params = Object.entries(c.params);
  const metrics = Object.entries(c.metrics);
  const out = new Array<Trial>(c.count);
  for (let i = 0; i < c.count; i++) {
    const p: Params = {};
    for (const [name, vs] of params) if (vs[i] !== null) p[name] = vs[i];
    const m: Metrics = {};
    for (const [name, vs] of metrics) if (vs[i] !== null) m[name] = vs[i];
    out[i] = {
      id: col.id[i],
      sweep_id: sweepId,
      number: col.number[i],
      kind,
      state: d.state[col.state[i]],
      params: p,
      value: col.value[i],
      attempt: col.attempt[i],
      max_attempts: 0,
      slots: 0,
      worker: d.worker[col.worker[i]],
      metrics: m,
      error: d.error[col.error[i]],
      control: 'none',
      created_ms: col.created_ms[i],
      started_ms: col.started_ms[i],
      finished_ms: col.finished_ms[i],
      extra: col.extra?.[i] ?? null,
    };
  }
  return out;
}

// Every trial of a sweep of one kind, in one request in columns; `measure`
// records the conversion as the performance measure 'hpo-columns-KIND'.
export async function allTrials(sweepId: string, kind = 'trial', measure = false): Promise<Trial[]> {
  const c = await request<TrialColumns>('GET', `/api/sweeps/${enc(sweepId)}/trials?format=columns&kind=${enc(kind)}`);
  const start = performance.now();
  const out = fromColumns(c, sweepId, kind);
  if (measure) performance.measure(`hpo-columns-${kind}`, { start, end: performance.now() });
  return out;
}
