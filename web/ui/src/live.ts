// Live updates: one EventSource on /api/events for the whole app (no polling).
// Pages subscribe with a listener; a page that re-fetches on events wraps its
// refresh in coalesce() so a burst of events costs at most a few requests per
// second. EventSource reconnects by itself and sends Last-Event-ID, which the
// server uses to replay what was missed. Where reads need a token, the stream
// is opened with a one-time ticket (never the token in a URL): the browser's
// own retry cannot reuse it, so a closed stream is opened again with a new
// ticket and the last event id seen.

import { getToken, readsNeedToken, streamTicket } from './api';

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
let lastId = '';  // the newest event seen: a stream opened anew resumes after it
let opening = false;
let retryTimer: number | undefined;

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
    if (e.id) lastId = e.id;
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

async function connect(): Promise<void> {
  // A stream the server refused (401, 5xx) is CLOSED for good: open a new one.
  if (opening || (source && source.readyState !== EventSource.CLOSED)) return;
  source?.close();
  source = null;
  const params: string[] = [];
  const ticketed = readsNeedToken && getToken() !== '';
  if (ticketed) {
    opening = true;
    try {
      params.push(`ticket=${encodeURIComponent(await streamTicket())}`);
    } catch {
      statusCb?.('offline');
      retryLater();
      return;
    } finally {
      opening = false;
    }
    if (lastId) params.push(`last_event_id=${encodeURIComponent(lastId)}`);
  }
  const s = new EventSource(params.length ? `/api/events?${params.join('&')}` : '/api/events');
  source = s;
  for (const t of kTypes) s.addEventListener(t, dispatch as EventListener);
  s.onopen = () => statusCb?.('live');
  s.onerror = () => {
    const closed = s.readyState === EventSource.CLOSED;
    statusCb?.(closed ? 'offline' : 'reconnecting');
    // The browser retries with the same, used ticket: open anew instead.
    if (ticketed && s === source) {
      s.close();
      retryLater();
    }
  };
}

function retryLater(): void {
  if (retryTimer !== undefined || !listeners.size) return;
  retryTimer = window.setTimeout(() => {
    retryTimer = undefined;
    void connect();
  }, 2000);
}

// Reconnects (after the token changed).
export function reconnect(): void {
  source?.close();
  source = null;
  if (listeners.size) void connect();
}

export function onLiveStatus(cb: (s: string) => void): void {
  statusCb = cb;
}

export function subscribe(l: Listener): () => void {
  void connect();
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
