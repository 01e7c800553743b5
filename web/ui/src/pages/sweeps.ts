// Sweeps list: the caller's projects (what each holds of its limits), then
// the sweeps (of one project, or all the caller may read): state, progress
// (done/total), best value; live from events.
import { api, Project, Sweep } from '../api';
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
    h('td', { class: 'project' }, s.project ?? ''),
    h('td', null, badge(s.state)),
    h('td', null, s.stage),
    h('td', null, progressBar(doneCount(s), s.max_trials || s.counts.queued + s.counts.running + doneCount(s))),
    h('td', null, `${s.counts.running} running`),
    h('td', { class: 'num best' }, s.best ? fmtNum(s.best.value) : '–'),
    h('td', null, `${s.objective.metric} (${s.objective.mode})`),
    h('td', { class: 'tags', title: s.note ?? '' }, ...(s.tags ?? []).map((t) => h('span', { class: 'tag' }, t))),
    h('td', null, agoEl(s.created_ms)),
  );
}

// "held / limit" ("–" for no limit).
function held(use: number, limit: number): string {
  return `${use} / ${limit > 0 ? limit : '–'}`;
}

// Bytes in binary units.
function fmtBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} B` : `${Math.round(v * 10) / 10} ${units[u]}`;
}

// "held / limit" of bytes ("–" for no limit); the cell is marked when at least 90 % is held.
function heldBytes(what: string, use: number, limit: number): HTMLElement {
  const near = limit > 0 && use >= 0.9 * limit;
  return h('td', { class: `num ${what}${near ? ' near-limit' : ''}`, title: `${use} bytes` },
    `${fmtBytes(use)} / ${limit > 0 ? fmtBytes(limit) : '–'}`);
}

function projectRow(p: Project, onPick: (name: string) => void): HTMLElement {
  const link = h('a', { href: '#/', class: 'project-name' }, p.name);
  link.addEventListener('click', (e) => {
    e.preventDefault();
    onPick(p.name);
  });
  return h(
    'tr',
    { 'data-project': p.name },
    h('td', null, link),
    h('td', null, p.role ?? '–'),
    h('td', { class: 'num' }, fmtNum(p.weight)),
    h('td', { class: 'num slots' }, held(p.use.slots, p.limits.max_slots)),
    h('td', { class: 'num gpus' }, held(p.use.gpus ?? 0, p.limits.max_gpus ?? 0)),
    h('td', { class: 'num' }, held(p.use.queued_trials, p.limits.max_queued_trials)),
    h('td', { class: 'num' }, held(p.use.active_sweeps, p.limits.max_active_sweeps)),
    heldBytes('store', p.use.store_bytes ?? 0, p.byte_limits?.store_bytes ?? 0),
    heldBytes('files', p.use.file_bytes ?? 0, p.byte_limits?.file_bytes ?? 0),
  );
}

export function mountSweeps(root: HTMLElement): () => void {
  const body = h('tbody');
  const projectsBody = h('tbody');
  const msg = h('p', { class: 'muted' }, 'Loading…');
  const filter = h('select', { id: 'project-filter' }, h('option', { value: '' }, 'all projects')) as HTMLSelectElement;
  const tagFilter = h('input', { id: 'tag-filter', type: 'search', placeholder: 'tag', 'aria-label': 'only sweeps with this tag' }) as HTMLInputElement;
  let project = '';
  root.append(
    h('h1', null, 'Projects'),
    h(
      'table',
      { class: 'grid', id: 'projects' },
      h(
        'thead',
        null,
        h('tr', null, ...['Project', 'Your role', 'Weight', 'Slots', 'GPUs', 'Queued trials', 'Active sweeps', 'Store', 'Artifact files'].map((t) => h('th', null, t))),
      ),
      projectsBody,
    ),
    h('h1', null, 'Sweeps ', filter, ' ', tagFilter),
    msg,
    h(
      'table',
      { class: 'grid', id: 'sweeps' },
      h(
        'thead',
        null,
        h('tr', null, ...['Name', 'ID', 'Project', 'State', 'Stage', 'Progress', 'Running', 'Best', 'Objective', 'Tags', 'Created'].map((t) => h('th', null, t))),
      ),
      body,
    ),
  );
  const pick = (name: string) => {
    project = name;
    filter.value = name;
    refresh();
  };
  filter.addEventListener('change', () => pick(filter.value));
  tagFilter.addEventListener('change', () => refresh());
  const refresh = coalesce(async () => {
    const [{ sweeps }, { projects }] = await Promise.all([api.sweeps(0, 200, project, tagFilter.value.trim()), api.projects()]);
    replace(projectsBody, projects.map((p) => projectRow(p, pick)));
    replace(
      filter,
      h('option', { value: '' }, 'all projects'),
      ...projects.map((p) => h('option', { value: p.name }, p.name)),
    );
    filter.value = project;
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
