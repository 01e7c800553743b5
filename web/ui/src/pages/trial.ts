// The trial page: parameters, metrics, attempts and the intermediate curve;
// re-read (coalesced) when an event names this trial.
import { api, ApiError, TrialDetail } from '../api';
import { Chart, trialCurveData, trialCurveOptions } from '../charts/plots';
import { badge, fmtDuration, fmtTime, fmtValue, h, replace } from '../dom';
import { coalesce, subscribe } from '../live';

function kv(rows: [string, string | Node][], id: string): HTMLElement {
  return h('table', { class: 'grid kv', id }, h('tbody', null, rows.map(([k, v]) => h('tr', null, h('th', null, k), h('td', null, v)))));
}

export function mountTrial(root: HTMLElement, id: string): () => void {
  const body = h('div');
  const chartEl = h('div', { class: 'chart', id: 'chart-trial' });
  const chart = new Chart(chartEl);
  root.append(body);

  function render(t: TrialDetail): void {
    const curve = trialCurveData(t.reports);
    replace(
      body,
      h('p', null, h('a', { href: `#/sweeps/${encodeURIComponent(t.sweep_id)}` }, '← sweep ', t.sweep_id)),
      h('h1', null, `Trial #${t.number} `, badge(t.state), t.kind !== 'trial' ? ` (${t.kind})` : ''),
      t.error ? h('p', { class: 'error' }, t.error) : null,
      h(
        'div',
        { class: 'panels' },
        h(
          'section',
          { class: 'panel' },
          h('h2', null, 'Trial'),
          kv(
            [
              ['ID', t.id],
              ['Value', fmtValue(t.value)],
              ['Worker', t.worker || '–'],
              ['Attempt', `${t.attempt + 1} of ${t.max_attempts}`],
              ['Slots', String(t.slots)],
              ['Created', fmtTime(t.created_ms)],
              ['Started', fmtTime(t.started_ms)],
              ['Finished', fmtTime(t.finished_ms)],
              ['Duration', fmtDuration(t.finished_ms && t.started_ms ? t.finished_ms - t.started_ms : 0)],
            ],
            'trial-facts',
          ),
        ),
        h('section', { class: 'panel' }, h('h2', null, 'Parameters'), kv(Object.entries(t.params).map(([k, v]) => [k, fmtValue(v)]), 'trial-params')),
        h('section', { class: 'panel' }, h('h2', null, 'Metrics'), Object.keys(t.metrics).length ? kv(Object.entries(t.metrics).map(([k, v]) => [k, fmtValue(v)]), 'trial-metrics') : h('p', { class: 'muted' }, 'No final metrics yet.')),
        h('section', { class: 'panel' }, h('h2', null, `Intermediate values (${t.reports.length})`), t.reports.length ? chartEl : h('p', { class: 'muted' }, 'No intermediate values reported.')),
        h(
          'section',
          { class: 'panel wide' },
          h('h2', null, 'Attempts'),
          h(
            'table',
            { class: 'grid', id: 'trial-attempts' },
            h('thead', null, h('tr', null, ['Attempt', 'Worker', 'Started', 'Ended', 'Outcome', 'Error'].map((c) => h('th', null, c)))),
            h(
              'tbody',
              null,
              t.attempts.map((a) =>
                h('tr', null, h('td', null, String(a.attempt + 1)), h('td', null, a.worker), h('td', null, fmtTime(a.started_ms)), h('td', null, fmtTime(a.ended_ms)), h('td', null, badge(a.outcome)), h('td', null, a.error)),
              ),
            ),
          ),
        ),
      ),
      h('section', { class: 'panel wide' }, h('h2', null, 'Log (tail)'), t.log_tail ? h('pre', { id: 'trial-log' }, t.log_tail) : h('p', { class: 'muted' }, "No log output (the worker keeps the tail of each attempt's output when it ends).")),
      t.extra && typeof t.extra === 'object' ? h('section', { class: 'panel wide' }, h('h2', null, 'Extra'), h('pre', null, JSON.stringify(t.extra, null, 2))) : null,
    );
    if (t.reports.length) chart.set('trial:' + curve.metrics.join(','), trialCurveOptions(curve.metrics), curve.data);
    else chart.destroy();
  }

  const refresh = coalesce(async () => {
    try {
      render(await api.trial(id));
    } catch (e) {
      replace(body, h('p', { class: 'error' }, e instanceof ApiError && e.status === 404 ? `No trial ${id}` : `Could not load: ${(e as Error).message}`));
    }
  }, 300);
  refresh();
  const unsub = subscribe((e) => {
    if (e.trial_id === id) refresh();
  });
  return () => {
    unsub();
    chart.destroy();
  };
}
