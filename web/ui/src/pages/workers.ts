// Workers: host, slots, busy slots, GPUs, what they offer (torch, cores,
// memory, labels), current trials, last heartbeat.
// Re-read on worker events and on trial start/finish (which change busy slots).
import { api, Worker } from '../api';
import { agoEl, h, replace } from '../dom';
import { coalesce, subscribe } from '../live';

function gpus(w: Worker): Node | string {
  if (!w.gpus.length) return '–';
  return h(
    'ul',
    { class: 'plain' },
    w.gpus.map((g) => h('li', null, `${g.index}: ${g.name} · ${g.memory_used_mb}/${g.memory_total_mb} MiB · ${g.utilization_pct < 0 ? 'no utilisation (MIG)' : g.utilization_pct + '%'}`)),
  );
}

// What placement matches trials' resources against: torch (on CUDA), cores, memory, labels.
export function offers(w: Worker): string {
  const parts: string[] = [];
  parts.push(w.torch ? (w.cuda ? 'torch on CUDA' : 'torch (CPU)') : 'no torch');
  if (w.cpus) parts.push(`${w.cpus} cpus`);
  if (w.memory_gb) parts.push(`${w.memory_gb.toFixed(1)} GB`);
  const labels = Object.entries(w.labels ?? {}).map(([k, v]) => (v ? `${k}=${v}` : k));
  if (labels.length) parts.push(labels.join(', '));
  return parts.join(' · ');
}

export function mountWorkers(root: HTMLElement): () => void {
  const body = h('tbody');
  const msg = h('p', { class: 'muted' }, 'Loading…');
  root.append(
    h('h1', null, 'Workers'),
    msg,
    h('table', { class: 'grid', id: 'workers' }, h('thead', null, h('tr', null, ['Name', 'Host', 'Slots', 'Busy', 'GPUs', 'Offers', 'Current trials', 'Last heartbeat', 'Started'].map((c) => h('th', null, c)))), body),
  );
  const refresh = coalesce(async () => {
    const { workers } = await api.workers();
    msg.textContent = workers.length ? '' : 'No workers registered. Start one with `hpo-worker`.';
    replace(
      body,
      workers.map((w) =>
        h(
          'tr',
          null,
          h('td', null, w.name),
          h('td', null, w.host),
          h('td', { class: 'num' }, String(w.slots)),
          h('td', { class: 'num' }, String(w.busy_slots)),
          h('td', null, gpus(w)),
          h('td', { class: 'offers' }, offers(w)),
          h('td', null, w.trials.length ? w.trials.flatMap((t, i) => [i ? ', ' : '', h('a', { href: `#/trials/${encodeURIComponent(t)}` }, t)]) : '–'),
          h('td', null, agoEl(w.last_heartbeat_ms)),
          h('td', null, agoEl(w.started_ms)),
        ),
      ),
    );
  }, 500);
  refresh();
  const unsub = subscribe((e) => {
    if (e.type.startsWith('worker.') || e.type === 'trial.started' || e.type === 'trial.finished') refresh();
  });
  return unsub;
}
