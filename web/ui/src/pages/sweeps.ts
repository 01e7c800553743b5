// Sweeps list: state, progress (done/total), best value; live from events.
import { api, Sweep } from '../api';
import { agoEl, badge, fmtNum, h, replace } from '../dom';
import { coalesce, subscribe } from '../live';

export function progressBar(done: number, total: number): HTMLElement {
  const frac = total > 0 ? Math.min(1, done / total) : 0;
  const fill = h('span', { class: 'fill' });
  fill.style.width = `${(frac * 100).toFixed(1)}%`;
  return h('span', { class: 'progress', title: `${done} of ${total}` }, h('span', { class: 'bar' }, fill), ` ${done}/${total}`);
}

export function doneCount(s: Sweep): number {
  const c = s.counts;
  return c.completed + c.failed + c.pruned + c.cancelled;
}

function row(s: Sweep): HTMLElement {
  return h(
    'tr',
    { 'data-sweep': s.id },
    h('td', null, h('a', { href: `#/sweeps/${encodeURIComponent(s.id)}`, class: 'sweep-name' }, s.name)),
    h('td', { class: 'mono' }, s.id),
    h('td', null, badge(s.state)),
    h('td', null, s.stage),
    h('td', null, progressBar(doneCount(s), s.max_trials || s.counts.queued + s.counts.running + doneCount(s))),
    h('td', null, `${s.counts.running} running`),
    h('td', { class: 'num best' }, s.best ? fmtNum(s.best.value) : '–'),
    h('td', null, `${s.objective.metric} (${s.objective.mode})`),
    h('td', null, agoEl(s.created_ms)),
  );
}

export function mountSweeps(root: HTMLElement): () => void {
  const body = h('tbody');
  const msg = h('p', { class: 'muted' }, 'Loading…');
  root.append(
    h('h1', null, 'Sweeps'),
    msg,
    h(
      'table',
      { class: 'grid', id: 'sweeps' },
      h(
        'thead',
        null,
        h('tr', null, ...['Name', 'ID', 'State', 'Stage', 'Progress', 'Running', 'Best', 'Objective', 'Created'].map((t) => h('th', null, t))),
      ),
      body,
    ),
  );
  const refresh = coalesce(async () => {
    const { sweeps } = await api.sweeps(0, 200);
    replace(body, sweeps.map(row));
    msg.textContent = sweeps.length ? '' : 'No sweeps yet. Submit one from the Submit page or with `hpo submit`.';
  }, 400);
  refresh();
  const unsub = subscribe((e) => {
    if (e.type.startsWith('sweep.') || e.type === 'trial.finished' || e.type === 'trial.started' || e.type === 'trial.queued')
      refresh();
  });
  return unsub;
}
