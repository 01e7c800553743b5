// The ensemble panel of the sweep page: the ensemble record
// (GET /api/sweeps/{id}/ensemble, written when every member has finished)
// compared with the best single trial and the mean member, each member's
// scores and weight, and the member trials while they run. Shown only for
// sweeps that have member trials.
import type { EnsembleCandidate, EnsembleRecord, Scores, ScoreSummary, Trial } from './api';
import { badge, fmtNum, fmtValue, h } from './dom';

const kMetricOrder: (keyof Scores)[] = ['accuracy', 'log_loss', 'rmse', 'mse'];
const kHigherIsBetter: Record<string, boolean> = { accuracy: true };

function metricsOf(rec: EnsembleRecord): (keyof Scores)[] {
  const seen = new Set<string>();
  const add = (s?: ScoreSummary) => {
    for (const part of [s?.validation, s?.test]) for (const k of Object.keys(part ?? {})) seen.add(k);
  };
  add(rec.ensemble);
  add(rec.best_single);
  for (const m of rec.members ?? []) add(m.metrics);
  return kMetricOrder.filter((k) => seen.has(k));
}

function scoreCells(s: ScoreSummary | undefined, metrics: (keyof Scores)[]): HTMLElement[] {
  return (['validation', 'test'] as const).flatMap((part) => metrics.map((m) => h('td', { class: 'num' }, fmtNum(s?.[part]?.[m]))));
}

// Horizontal bars of one test metric: every member, the best single, the ensemble.
function bars(rec: EnsembleRecord, metric: keyof Scores): HTMLElement {
  const rows: { label: string; v: number | undefined; cls: string }[] = [
    { label: 'ensemble', v: rec.ensemble?.test?.[metric], cls: 'ens' },
    { label: `best single${rec.best_single?.trial_id ? ` (${rec.best_single.trial_id})` : ''}`, v: rec.best_single?.test?.[metric], cls: 'best' },
    { label: 'mean member', v: rec.mean_member?.test?.[metric], cls: 'mean' },
    ...(rec.members ?? []).filter((m) => m.kind === 'member').map((m) => ({ label: m.trial_id, v: m.metrics?.test?.[metric], cls: 'member' })),
  ];
  const vals = rows.map((r) => r.v).filter((v): v is number => typeof v === 'number');
  const max = Math.max(...vals, 1e-12);
  return h(
    'div',
    { class: 'ens-bars', id: 'ensemble-bars' },
    h('p', { class: 'muted small' }, `test ${metric} (${kHigherIsBetter[metric] ? 'higher' : 'lower'} is better)`),
    rows.map((r) => {
      const fill = h('span', { class: `fill ${r.cls}` });
      fill.style.width = `${typeof r.v === 'number' ? (100 * r.v) / max : 0}%`;
      return h('div', { class: 'imp-row' }, h('span', { class: 'imp-name', title: r.label }, r.label), h('span', { class: 'bar' }, fill), h('span', { class: 'imp-val' }, fmtNum(r.v, 4)));
    }),
  );
}

// The candidates the stage chose among (best single, bagged, selection,
// stacking): cross-validated loss first, the chosen one marked, and the
// decision's reason (a record without one: an older scheduler's).
function candidatesView(record: EnsembleRecord, metrics: (keyof Scores)[]): Node[] {
  const cands: EnsembleCandidate[] = record.candidates ?? [];
  if (!cands.length) return [];
  const cv = cands.some((c) => c.cross_validated);
  const d = record.decision;
  const how = d?.reason ?? (record.choose && record.choose !== 'auto' ? `named by the spec (choose: ${record.choose})` : `the lowest ${cv ? 'cross-validated' : 'validation'} loss`);
  const out: Node[] = [h('p', { id: 'ensemble-choice' }, 'Chosen: ', h('strong', null, record.chosen ?? '?'), ` — ${how}.`)];
  if (d?.decided === false) out.push(h('p', { id: 'ensemble-undecided', class: 'warn' }, `The ${d.validation_rows ?? '?'} validation rows${d.oob_rows ? ` and ${d.oob_rows} out-of-bag rows` : ''} could not tell: the best single model was kept.`));
  if (record.warnings?.length) out.push(h('ul', { id: 'ensemble-warnings', class: 'warn' }, record.warnings.map((w) => h('li', null, w))));
  out.push(
    h(
      'table',
      { class: 'grid', id: 'ensemble-candidates' },
      h(
        'thead',
        null,
        h('tr', null, h('th', null, 'Candidate'), h('th', null, 'cv loss'), h('th', null, 'cv accuracy'), ...metrics.map((m) => h('th', null, `test ${m}`)), h('th', null, 'How')),
      ),
      h(
        'tbody',
        null,
        cands.map((c) =>
          h(
            'tr',
            { class: c.name === record.chosen ? 'chosen' : '' },
            h('th', null, c.name, c.name === record.chosen ? h('span', { class: 'badge st-completed' }, 'chosen') : ''),
            h('td', { class: 'num' }, fmtNum(c.cv_loss, 4)),
            h('td', { class: 'num' }, fmtNum(c.cv_accuracy, 4)),
            ...metrics.map((m) => h('td', { class: 'num' }, fmtNum(c.test?.[m]))),
            h('td', { class: 'muted small' }, c.detail ?? '', c.untrusted ? ` (not taken at face value: ${c.untrusted})` : ''),
          ),
        ),
      ),
    ),
  );
  return out;
}

export function ensembleView(members: Trial[], record: EnsembleRecord | null, note: string): Node[] {
  const out: Node[] = [];
  const done = members.filter((m) => m.state === 'completed').length;
  out.push(h('p', null, `${members.length} member trials, ${done} completed. `, record ? `Combine: ${record.combine ?? '?'}.` : note));
  if (record) {
    const metrics = metricsOf(record);
    out.push(...candidatesView(record, metrics));
    const head = h(
      'thead',
      null,
      h('tr', null, h('th', { rowspan: 2 }, 'Model'), h('th', { colspan: metrics.length }, 'validation'), h('th', { colspan: metrics.length }, 'test')),
      h('tr', null, [...metrics, ...metrics].map((m) => h('th', null, m))),
    );
    const rows: [string, ScoreSummary | undefined][] = [
      ['ensemble', record.ensemble],
      [`best single (${record.best_single?.trial_id ?? '?'})`, record.best_single],
      ['mean member', record.mean_member],
    ];
    if (record.oob?.scores) rows.push([`out-of-bag (${record.oob.rows_covered}/${record.oob.rows_total} rows)`, { validation: record.oob.scores }]);
    out.push(
      h('table', { class: 'grid', id: 'ensemble-compare' }, head, h('tbody', null, rows.map(([name, s]) => h('tr', null, h('th', null, name), ...scoreCells(s, metrics))))),
    );
    const primary = metrics.find((m) => record.ensemble?.test?.[m] !== undefined);
    if (primary) out.push(bars(record, primary));
    if (record.members?.length)
      out.push(
        h(
          'table',
          { class: 'grid', id: 'ensemble-models' },
          h('thead', null, h('tr', null, h('th', null, 'Model'), h('th', null, 'Kind'), h('th', null, 'Weight'), h('th', null, 'Features'), ...metrics.map((m) => h('th', null, `test ${m}`)))),
          h(
            'tbody',
            null,
            record.members.map((m) =>
              h(
                'tr',
                null,
                h('td', null, h('a', { href: `#/trials/${encodeURIComponent(m.trial_id)}` }, m.trial_id)),
                h('td', null, m.kind),
                h('td', { class: 'num' }, fmtNum(m.weight, 3)),
                h('td', { class: 'features' }, m.features?.length ? `${m.features.length} of ${record.n_features || '?'}` : 'all'),
                ...metrics.map((k) => h('td', { class: 'num' }, fmtNum(m.metrics?.test?.[k]))),
              ),
            ),
          ),
        ),
      );
  }
  const metricNames = [...new Set(members.flatMap((m) => Object.keys(m.metrics)))].sort();
  out.push(
    h(
      'table',
      { class: 'grid', id: 'ensemble-members' },
      h('thead', null, h('tr', null, h('th', null, 'Member'), h('th', null, 'State'), h('th', null, 'Value'), ...metricNames.map((m) => h('th', null, m)))),
      h(
        'tbody',
        null,
        members.map((m) =>
          h(
            'tr',
            null,
            h('td', null, h('a', { href: `#/trials/${encodeURIComponent(m.id)}` }, `#${m.number}`)),
            h('td', null, badge(m.state)),
            h('td', { class: 'num' }, fmtValue(m.value)),
            ...metricNames.map((k) => h('td', { class: 'num' }, fmtValue(m.metrics[k]))),
          ),
        ),
      ),
    ),
  );
  return out;
}
