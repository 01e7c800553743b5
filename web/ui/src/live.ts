// Live updates: one EventSource on /api/events for the whole app (no polling).
// Pages subscribe with a listener; a page that re-fetches on events wraps its
// refresh in coalesce() so a burst of events costs at most a few requests per
// second. EventSource reconnects by itself and sends Last-Event-ID, which the
// server uses to replay what was missed.

import { getToken, readsNeedToken } from './api';

export interface LiveEvent {
  id: string;
  type: string;
  sweep_id: string;
  trial_id: string;
  data: Record<string, unknown>;
}

type Listener = (e: LiveEvent) => void;

const kTypes = [
  'sweep.created',
  'sweep.finished',
  'sweep.stage',
  'sweep.cancelled',
  'trial.queued',
  'trial.started',
  'trial.reported',
  'trial.finished',
  'trial.control',
  'worker.joined',
  'worker.lost',
  'message',
];

const listeners = new Set<Listener>();
let source: EventSource | null = null;
let statusCb: ((s: string) => void) | null = null;

function dispatch(ev: MessageEvent): void {
  let e: LiveEvent;
  try {
    const doc = JSON.parse(String(ev.data));
    e = {
      id: String(doc.id ?? ev.lastEventId ?? ''),
      type: String(doc.type ?? ev.type),
      sweep_id: String(doc.sweep_id ?? ''),
      trial_id: String(doc.trial_id ?? ''),
      data: doc.data && typeof doc.data === 'object' ? doc.data : {},
    };
  } catch {
    return;
  }
  for (const l of Array.from(listeners)) {
    try {
      l(e);
    } catch (err) {
      console.error('live listener failed', err);
    }
  }
}

function connect(): void {
  // A stream the server refused (401, 5xx) is CLOSED for good: open a new one.
  if (source && source.readyState !== EventSource.CLOSED) return;
  source?.close();
  const token = getToken();
  source = new EventSource(readsNeedToken && token ? `/api/events?access_token=${encodeURIComponent(token)}` : '/api/events');
  for (const t of kTypes) source.addEventListener(t, dispatch as EventListener);
  source.onopen = () => statusCb?.('live');
  source.onerror = () => statusCb?.(source?.readyState === EventSource.CLOSED ? 'offline' : 'reconnecting');
}

// Reconnects (after the token changed).
export function reconnect(): void {
  source?.close();
  source = null;
  if (listeners.size) connect();
}

export function onLiveStatus(cb: (s: string) => void): void {
  statusCb = cb;
}

export function subscribe(l: Listener): () => void {
  connect();
  listeners.add(l);
  return () => listeners.delete(l);
}

// Wraps an async refresh so that calls made while one is scheduled or running
// collapse into one more run, no sooner than `minGapMs` after the last start
// (or twice the last run's duration, when refreshes get slow: a flood of
// events on a huge sweep then cannot keep the page busy re-reading).
export function coalesce(fn: () => Promise<void>, minGapMs = 300): () => void {
  let timer: number | null = null;
  let running = false;
  let again = false;
  let lastStart = -Infinity; // the first call runs at once
  let lastTook = 0;
  const run = async () => {
    timer = null;
    running = true;
    lastStart = performance.now();
    try {
      await fn();
    } catch (err) {
      console.warn('refresh failed', err);
    } finally {
      lastTook = performance.now() - lastStart;
      running = false;
      if (again) {
        again = false;
        schedule();
      }
    }
  };
  const schedule = () => {
    if (running) {
      again = true;
      return;
    }
    if (timer !== null) return;
    const wait = Math.max(0, lastStart + Math.max(minGapMs, 2 * lastTook) - performance.now());
    timer = window.setTimeout(run, wait);
  };
  return schedule;
}
