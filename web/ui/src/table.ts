// A virtualised trial table: a fixed-height scroller with a spacer as tall as
// every row, and only the rows in view (plus a margin) in the DOM, placed with
// transform. 10,000 rows cost ~30 DOM rows, so scrolling and live updates do
// not lag. Sorting and filtering run on the in-memory array.
import type { Trial } from './api';
import { badge, fmtDuration, fmtValue, h, replace } from './dom';

const kRowH = 26;
const kOverscan = 8;

interface Column {
  key: string;
  label: string;
  width: string;
  cell: (t: Trial) => Node | string;
  sort: (t: Trial) => number | string | null;
}

export class TrialTable {
  readonly el: HTMLElement;
  private head = h('div', { class: 'vt-head' });
  private scroller = h('div', { class: 'vt-scroll' });
  private spacer = h('div', { class: 'vt-spacer' });
  private rows = h('div', { class: 'vt-rows' });
  private info = h('span', { class: 'muted', id: 'trial-count' });
  private filter = h('select', { id: 'state-filter' });
  private all: Trial[] = [];
  private view: Trial[] = [];
  private columns: Column[] = [];
  private paramKey = '';
  private sortKey = 'number';
  private desc = false;
  private drawn = '';

  constructor() {
    for (const s of ['', 'queued', 'running', 'completed', 'pruned', 'failed', 'cancelled'])
      this.filter.append(h('option', { value: s }, s || 'all states'));
    this.filter.addEventListener('change', () => this.refresh());
    this.scroller.append(this.spacer, this.rows);
    this.scroller.addEventListener('scroll', () => this.draw(), { passive: true });
    this.el = h(
      'div',
      { class: 'vt', id: 'trial-table' },
      h('div', { class: 'vt-tools' }, h('label', null, 'Filter ', this.filter), this.info),
      this.head,
      this.scroller,
    );
  }

  setTrials(trials: Trial[]): void {
    this.all = trials;
    const params = [...new Set(trials.flatMap((t) => Object.keys(t.params)))].sort();
    // Final metrics other than the objective (which is the Value column).
    const metrics = [...new Set(trials.flatMap((t) => Object.keys(t.metrics)))].filter((m) => m !== this.objective).sort();
    const key = params.join('\u0000') + '\u0001' + metrics.join('\u0000');
    if (key !== this.paramKey || !this.columns.length) {
      this.paramKey = key;
      this.columns = this.makeColumns(params, metrics);
      this.renderHead();
    }
    this.refresh();
  }

  // The objective metric's name: its values are the Value column already.
  objective = 'value';

  private makeColumns(params: string[], metrics: string[]): Column[] {
    const cols: Column[] = [
      { key: 'number', label: '#', width: '60px', cell: (t) => h('a', { href: `#/trials/${encodeURIComponent(t.id)}` }, String(t.number)), sort: (t) => t.number },
      { key: 'state', label: 'State', width: '96px', cell: (t) => badge(t.state), sort: (t) => t.state },
      { key: 'value', label: 'Value', width: '110px', cell: (t) => fmtValue(t.value), sort: (t) => t.value },
    ];
    for (const p of params)
      cols.push({ key: 'param:' + p, label: p, width: 'minmax(90px, 1fr)', cell: (t) => fmtValue(t.params[p]), sort: (t) => (t.params[p] as number | string | null) ?? null });
    for (const m of metrics)
      cols.push({ key: 'metric:' + m, label: m, width: 'minmax(90px, 1fr)', cell: (t) => fmtValue(t.metrics[m]), sort: (t) => t.metrics[m] ?? null });
    cols.push(
      { key: 'duration', label: 'Duration', width: '90px', cell: (t) => fmtDuration(t.finished_ms && t.started_ms ? t.finished_ms - t.started_ms : t.started_ms ? Date.now() - t.started_ms : 0), sort: (t) => (t.finished_ms && t.started_ms ? t.finished_ms - t.started_ms : null) },
      { key: 'worker', label: 'Worker', width: 'minmax(90px, 1fr)', cell: (t) => t.worker || '–', sort: (t) => t.worker || null },
      { key: 'attempt', label: 'Att.', width: '50px', cell: (t) => String(t.attempt + 1), sort: (t) => t.attempt },
      { key: 'error', label: 'Error', width: 'minmax(120px, 2fr)', cell: (t) => t.error || '', sort: (t) => t.error || null },
    );
    this.el.style.setProperty('--vt-cols', cols.map((c) => c.width).join(' '));
    return cols;
  }

  private renderHead(): void {
    replace(
      this.head,
      this.columns.map((c) => {
        const arrow = c.key === this.sortKey ? (this.desc ? ' ▼' : ' ▲') : '';
        const b = h('button', { class: 'vt-th', 'data-key': c.key, type: 'button', title: 'sort' }, c.label + arrow);
        b.addEventListener('click', () => {
          if (this.sortKey === c.key) this.desc = !this.desc;
          else (this.sortKey = c.key), (this.desc = false);
          this.renderHead();
          this.refresh();
        });
        return b;
      }),
    );
  }

  private refresh(): void {
    const state = this.filter.value;
    const col = this.columns.find((c) => c.key === this.sortKey) ?? this.columns[0];
    const dir = this.desc ? -1 : 1;
    const keyed = this.all.filter((t) => !state || t.state === state).map((t) => [col.sort(t), t] as const);
    keyed.sort((a, b) => {
      const x = a[0], y = b[0];
      if (x === null || y === null) return x === y ? a[1].number - b[1].number : x === null ? 1 : -1; // missing last
      if (x < y) return -dir;
      if (x > y) return dir;
      return a[1].number - b[1].number;
    });
    this.view = keyed.map((k) => k[1]);
    this.info.textContent = ` ${this.view.length} of ${this.all.length} trials`;
    this.spacer.style.height = `${this.view.length * kRowH}px`;
    this.scroller.style.height = `${Math.max(3, Math.min(16, this.view.length)) * kRowH + 2}px`;
    this.drawn = '';
    this.draw();
  }

  private draw(): void {
    const top = this.scroller.scrollTop;
    const height = this.scroller.clientHeight || 420;
    const first = Math.max(0, Math.floor(top / kRowH) - kOverscan);
    const last = Math.min(this.view.length, Math.ceil((top + height) / kRowH) + kOverscan);
    const key = `${first}:${last}`;
    if (key === this.drawn) return;
    this.drawn = key;
    const rows: HTMLElement[] = [];
    for (let i = first; i < last; i++) {
      const t = this.view[i];
      const row = h('div', { class: `vt-row${i % 2 ? ' odd' : ''}`, 'data-trial': t.id });
      for (const c of this.columns) row.append(h('div', { class: 'vt-td' }, c.cell(t)));
      rows.push(row);
    }
    this.rows.style.transform = `translateY(${first * kRowH}px)`;
    replace(this.rows, rows);
  }
}
