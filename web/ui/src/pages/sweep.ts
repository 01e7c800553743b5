// The sweep page: header with progress and cancel, the trial table and the
// charts (history, parallel coordinates, scatter, intermediate curves,
// importance, ensemble members). Live: events for this sweep mark trials
// dirty; one coalesced refresh (at most ~3/s) re-reads the sweep document and
// the dirty trials (or everything after a large burst) and redraws.
import { allTrials, api, ApiError, EnsembleRecord, ParetoFront, Sweep, Trial, TrialDetail } from '../api';
import { ensembleView } from '../ensemble';
import { Chart, curvesData, curvesOptions, CurveTrial, historyData, historyOptions, paretoData, paretoOptions, scatterData, scatterOptions } from '../charts/plots';
import { drawLineage, lineageNodes } from '../charts/lineage';
import { drawParcoords, kBestLines } from '../charts/parcoords';
import { badge, fmtNum, fmtTime, h, replace } from '../dom';
import { kImportanceSample, paramImportance } from '../importance';
import { coalesce, subscribe } from '../live';
import { TrialTable } from '../table';
import { doneCount, progressBar } from './sweeps';

const kCurveTrials = 40;
const kDirtyLimit = 40;

function panel(title: string, id: string, ...body: Node[]): HTMLElement {
  return h('section', { class: 'panel', id }, h('h2', null, title), ...body);
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

// Parameters the spec puts on a log scale.
function logParams(spec: unknown): Set<string> {
  const ps = (spec as { parameters?: Record<string, { log?: boolean }> } | null)?.parameters ?? {};
  return new Set(Object.entries(ps).filter(([, p]) => p && p.log === true).map(([k]) => k));
}

// Whether trials of this spec report intermediate values at all.
// The metrics of a spec with several objectives (empty with one).
function objectiveMetrics(spec: unknown): string[] {
  const list = (spec as { objectives?: { metric?: unknown }[] } | null)?.objectives;
  if (!Array.isArray(list) || list.length < 2) return [];
  return list.map((o) => String(o?.metric ?? ''));
}

function reportsCurves(spec: unknown): boolean {
  const s = spec as { trial?: { kind?: string; steps?: number }; early_stopping?: unknown } | null;
  if (!s || !s.trial) return true;
  if (s.early_stopping) return true;
  if (s.trial.kind === 'synthetic') return (s.trial.steps ?? 0) > 0;
  return true;
}

export function mountSweep(root: HTMLElement, id: string): () => void {
  let sweep: Sweep | null = null;
  const trials = new Map<string, Trial>();
  const members = new Map<string, Trial>();
  const curves = new Map<string, CurveTrial>();
  const dirty = new Set<string>();
  let reloadAll = true;
  let disposed = false;
  let cancelArmed = false;
  let ensembleRecord: EnsembleRecord | null = null;
  let ensembleNote = '';
  let rendered = false;
  let measured = false;

  const head = h('div', { class: 'sweep-head' });
  const errorBox = h('p', { class: 'error', id: 'sweep-error' });
  const table = new TrialTable();
  const historyEl = h('div', { class: 'chart', id: 'chart-history' });
  const parcoords = h('canvas', { id: 'chart-parcoords' });
  const scatterEl = h('div', { class: 'chart', id: 'chart-scatter' });
  const scatterPick = h('select', { id: 'scatter-param' });
  const curvesEl = h('div', { class: 'chart', id: 'chart-curves' });
  const curvesNote = h('p', { class: 'muted' });
  const importanceEl = h('div', { class: 'importance', id: 'importance' });
  const importanceNote = h('p', { class: 'muted small', id: 'importance-note' });
  const parcoordsNote = h('p', { class: 'muted small', id: 'parcoords-note' });
  const ensembleBody = h('div');
  const specEl = h('pre', { id: 'sweep-spec' });
  const ensemblePanel = panel('Ensemble', 'ensemble', ensembleBody);
  ensemblePanel.hidden = true;
  const paretoEl = h('div', { class: 'chart', id: 'chart-pareto' });
  const paretoX = h('select', { id: 'pareto-x' });
  const paretoY = h('select', { id: 'pareto-y' });
  const paretoNote = h('p', { class: 'muted small', id: 'pareto-note' });
  const paretoPanel = panel('Pareto front', 'panel-pareto', h('label', null, 'x ', paretoX), h('label', null, ' y ', paretoY), paretoEl, paretoNote);
  paretoPanel.hidden = true;
  let paretoFront: ParetoFront | null = null;
  const pareto = new Chart(paretoEl, 300);
  paretoX.addEventListener('change', () => drawPareto());
  paretoY.addEventListener('change', () => drawPareto());
  const lineageEl = h('canvas', { id: 'chart-lineage' });
  const lineageNote = h('p', { class: 'muted small', id: 'lineage-note' });
  const lineagePanel = panel('Lineage', 'panel-lineage', h('div', { class: 'canvas-wrap' }, lineageEl), lineageNote);
  lineagePanel.hidden = true;
  const history = new Chart(historyEl);
  const scatter = new Chart(scatterEl);
  const curvesChart = new Chart(curvesEl);
  scatterPick.addEventListener('change', () => drawCharts());

  root.append(
    head,
    errorBox,
    h(
      'div',
      { class: 'panels' },
      paretoPanel,
      lineagePanel,
      panel('Optimisation history', 'panel-history', historyEl),
      panel('Parameter importance', 'panel-importance', importanceEl, h('p', { class: 'muted small' }, 'fANOVA-lite: share of the objective-rank variance explained by each parameter alone (between-bin variance of per-bin means).'), importanceNote),
      panel('Parallel coordinates', 'panel-parcoords', h('div', { class: 'canvas-wrap' }, parcoords), parcoordsNote),
      panel('Objective vs parameter', 'panel-scatter', h('label', null, 'Parameter ', scatterPick), scatterEl),
      panel('Intermediate values', 'panel-curves', curvesNote, curvesEl),
      ensemblePanel,
    ),
    panel('Trials', 'panel-trials', table.el),
    h('details', { class: 'panel spec' }, h('summary', null, 'Spec'), specEl),
  );

  function paramNames(): string[] {
    return [...new Set([...trials.values()].flatMap((t) => Object.keys(t.params)))].sort();
  }

  function renderHead(): void {
    if (!sweep) return;
    const s = sweep;
    table.objective = s.objective.metric || 'value';
    if (!specEl.textContent) specEl.textContent = JSON.stringify(s.spec, null, 2);
    const cancel = h('button', { id: 'cancel-sweep', type: 'button', class: 'danger' }, cancelArmed ? 'Click again to cancel' : 'Cancel sweep');
    cancel.disabled = s.state !== 'running';
    cancel.addEventListener('click', async () => {
      // Two clicks (no modal dialog): the first arms the button. The state
      // lives outside the button, which live updates re-create.
      if (!cancelArmed) {
        cancelArmed = true;
        cancel.textContent = 'Click again to cancel';
        return;
      }
      cancelArmed = false;
      try {
        sweep = await api.cancel(s.id);
        renderHead();
      } catch (e) {
        errorBox.textContent = e instanceof ApiError && e.status === 401 ? 'Cancel needs the API token (top right).' : `Cancel failed: ${(e as Error).message}`;
      }
    });
    replace(
      head,
      h('h1', null, h('span', { id: 'sweep-name' }, s.name), ' ', badge(s.state)),
      h(
        'div',
        { class: 'facts' },
        h('span', null, 'ID ', h('code', null, s.id)),
        h('span', null, 'Stage ', s.stage),
        h('span', null, 'Progress ', progressBar(doneCount(s), s.max_trials)),
        h('span', null, `${s.counts.running} running · ${s.counts.queued} queued · ${s.counts.pruned} pruned · ${s.counts.failed} failed`),
        h('span', { id: 'sweep-best' }, `Best ${s.objective.metric} (${s.objective.mode}): `, s.best ? `${fmtNum(s.best.value)} (#${s.best.number})` : '–'),
        h('span', null, 'Created ', fmtTime(s.created_ms)),
        h('a', { href: `/api/sweeps/${encodeURIComponent(s.id)}/trials?format=csv`, download: `${s.id}-trials.csv` }, 'CSV'),
        cancel,
      ),
      s.error ? h('p', { class: 'error' }, s.error) : null,
      s.unschedulable
        ? h('p', { class: 'error', id: 'sweep-unschedulable' }, `Unschedulable: ${s.unschedulable}. Its trials wait aside, behind no one; they start once a worker that can run them registers.`)
        : null,
    );
  }

  // The first render's phases as performance measures ('hpo-draw-NAME'), for
  // ui_bench's breakdown; later redraws are not recorded.
  function phase<T>(name: string, fn: () => T): T {
    if (rendered && measured) return fn();
    const start = performance.now();
    const out = fn();
    performance.measure(`hpo-draw-${name}`, { start, end: performance.now() });
    return out;
  }

  function drawCharts(): void {
    if (!sweep) return;
    const list = phase('order', () => [...trials.values()].sort((a, b) => a.number - b.number));
    const metric = sweep.objective.metric || 'value';
    const maximize = sweep.objective.mode === 'max';
    phase('history', () => history.set(`history:${list.length > 1000}`, historyOptions(metric, list.length > 1000), historyData(list, maximize, list.length > 1000)));
    const params = paramNames();
    const chosen = scatterPick.value;
    if (scatterPick.options.length !== params.length || [...scatterPick.options].some((o, i) => o.value !== params[i])) {
      replace(scatterPick, params.map((p) => h('option', { value: p }, p)));
      if (params.includes(chosen)) scatterPick.value = chosen;
    }
    const param = scatterPick.value;
    if (param)
      phase('scatter', () => {
        const sc = scatterData(list, param);
        scatter.set(`scatter:${param}:${sc.categories?.join(',') ?? ''}:${list.length > 1000}`, scatterOptions(param, metric, sc.categories, list.length > 1000), sc.data);
      });
    const spec = sweep.spec;
    const drawn = phase('parcoords', () => drawParcoords(parcoords, list, params, metric, maximize, logParams(spec)));
    parcoordsNote.textContent =
      drawn.lines < drawn.trials ? `${drawn.lines.toLocaleString('en')} of ${drawn.trials.toLocaleString('en')} completed trials drawn: the best ${kBestLines.toLocaleString('en')} and an even sample by rank of the rest.` : '';
    const imp = phase('importance', () => paramImportance(list, params));
    const scored = list.filter((t) => t.value !== null && Number.isFinite(t.value)).length;
    importanceNote.textContent = scored > kImportanceSample ? `From an even sample of ${kImportanceSample.toLocaleString('en')} of ${scored.toLocaleString('en')} trials.` : '';
    replace(
      importanceEl,
      imp.map((i) => {
        const fill = h('span', { class: 'fill' });
        fill.style.width = `${(i.share * 100).toFixed(1)}%`;
        return h('div', { class: 'imp-row' }, h('span', { class: 'imp-name' }, i.param), h('span', { class: 'bar' }, fill), h('span', { class: 'imp-val' }, `${(i.share * 100).toFixed(1)}%`));
      }),
    );
    drawCurves();
    drawEnsemble();
    drawLineagePanel(list, metric);
  }

  // search.multi_fidelity and search.pbt: which trial went on from which.
  function drawLineagePanel(list: Trial[], metric: string): void {
    const nodes = lineageNodes(list);
    lineagePanel.hidden = nodes.length === 0;
    if (lineagePanel.hidden) return;
    const s = phase('lineage', () => drawLineage(lineageEl, nodes, metric));
    lineageNote.textContent = s.pbt
      ? `${s.groups} members, ${s.trials} completed intervals · ${s.exploits} exploits (orange, dashed: a member went on from a better one's checkpoint with explored parameters), ${s.continued} continued from their own.`
      : `${s.trials} completed trials in ${s.groups} bracket${s.groups === 1 ? '' : 's'} · ${s.continued} promotions (grey: resumed from the rung below's checkpoint).`;
  }

  function drawCurves(): void {
    if (!sweep) return;
    const metric = sweep.objective.metric || 'value';
    const cs = [...curves.values()].filter((c) => c.reports.length).sort((a, b) => a.number - b.number);
    if (!cs.length) {
      curvesChart.destroy();
      curvesNote.textContent = reportsCurves(sweep.spec) ? 'No intermediate values reported yet.' : 'These trials report no intermediate values.';
      return;
    }
    const pruned = cs.filter((c) => c.state === 'pruned').length;
    curvesNote.textContent = `${cs.length} most recent trials; ${pruned} pruned (red, dashed, ○ where stopped).`;
    const key = 'curves:' + cs.map((c) => `${c.number}${c.state}`).join(',');
    curvesChart.set(key, curvesOptions(cs, metric), curvesData(cs, metric));
  }

  // Several objectives: two of them against each other, the front from the
  // API (the front of all objectives, not of the two shown).
  function drawPareto(): void {
    const metrics = sweep ? objectiveMetrics(sweep.spec) : [];
    paretoPanel.hidden = metrics.length < 2;
    if (paretoPanel.hidden) return;
    if (paretoX.options.length !== metrics.length) {
      replace(paretoX, metrics.map((m) => h('option', { value: m }, m)));
      replace(paretoY, metrics.map((m) => h('option', { value: m }, m)));
      paretoX.value = metrics[0];
      paretoY.value = metrics[1];
    }
    const f = paretoFront;
    const numbers = new Set((f?.front ?? []).map((m) => m.number));
    const list = [...trials.values()];
    const x = paretoX.value;
    const y = paretoY.value;
    const big = list.length > 1000;
    pareto.set(`pareto:${x}:${y}:${big}`, paretoOptions(x, y, metrics.length === 2, big), paretoData(list, numbers, x, y));
    if (!f) {
      paretoNote.textContent = 'No completed trial yet.';
      return;
    }
    const ref = f.objectives.map((o, k) => `${o.metric} ${fmtNum(f.reference[k] ?? NaN)}`).join(', ');
    paretoNote.textContent = `${f.front.length} on the front of ${f.counted} counted trials · hypervolume ${f.hypervolume === null ? '–' : fmtNum(f.hypervolume)} (reference ${ref}).`;
  }

  const loadPareto = coalesce(async () => {
    if (disposed || !sweep || objectiveMetrics(sweep.spec).length < 2) return;
    try {
      paretoFront = await api.pareto(id);
    } catch (e) {
      paretoFront = null;
      paretoNote.textContent = `Pareto front: ${(e as Error).message}`;
    }
    drawPareto();
  }, 1000);

  function drawEnsemble(): void {
    if (!sweep) return;
    const ms = [...members.values()].sort((a, b) => a.number - b.number);
    ensemblePanel.hidden = ms.length === 0 && !ensembleRecord;
    if (ensemblePanel.hidden) return;
    replace(ensembleBody, ensembleView(ms, ensembleRecord, ensembleNote));
  }

  // The ensemble record exists once every member has finished (404 before).
  const loadEnsemble = coalesce(async () => {
    if (disposed || !members.size) return;
    try {
      ensembleRecord = await api.ensemble(id);
    } catch (e) {
      ensembleRecord = null;
      ensembleNote = e instanceof ApiError && e.status === 404 ? 'The ensemble is evaluated when every member has finished.' : `Ensemble record: ${(e as Error).message}`;
    }
    drawEnsemble();
  }, 1000);

  async function loadCurves(): Promise<void> {
    if (!sweep || !reportsCurves(sweep.spec)) return;
    const recent = [...trials.values()]
      .filter((t) => t.state !== 'queued' && t.state !== 'cancelled')
      .sort((a, b) => b.number - a.number)
      .slice(0, kCurveTrials);
    const details = await mapLimit(recent, 8, (t) => api.trial(t.id).catch(() => null));
    for (const d of details) if (d) curves.set(d.id, { number: d.number, state: d.state, reports: d.reports });
  }

  function absorb(d: TrialDetail): void {
    const { attempts: _a, reports, ...t } = d;
    if (t.kind === 'member') members.set(t.id, t);
    else trials.set(t.id, t);
    if (t.kind !== 'member' && (curves.has(t.id) || reports.length)) {
      curves.set(t.id, { number: t.number, state: t.state, reports });
      // Keep the most recent trials only.
      if (curves.size > kCurveTrials) {
        const oldest = [...curves.entries()].sort((a, b) => a[1].number - b[1].number)[0];
        curves.delete(oldest[0]);
      }
    }
  }

  const refresh = coalesce(async () => {
    if (disposed) return;
    try {
      const s = await api.sweep(id);
      const first = !rendered;
      sweep = s;
      if (reloadAll) {
        dirty.clear();
        // Members only exist for sweeps with an ensemble stage.
        const hasMembers = (s.next_member ?? 0) > 0 || Object.values(s.member_counts ?? {}).some((c) => c > 0);
        const [ts, ms] = await Promise.all([
          allTrials(id, 'trial', first),
          hasMembers ? api.trials(id, { kind: 'member', limit: 1000 }) : Promise.resolve({ trials: [] as Trial[], total: 0 }),
        ]);
        reloadAll = false;
        if (first) performance.mark('hpo-sweep-data');
        trials.clear();
        for (const t of ts) trials.set(t.id, t);
        members.clear();
        for (const m of ms.trials) members.set(m.id, m);
        if (members.size) loadEnsemble();
        if (first) {
          rendered = true;
          renderHead();
          phase('table', () => table.setTrials([...trials.values()]));
          drawCharts();
          drawPareto();
          loadPareto();
          measured = true;
          // First complete render (header, table, charts) for tests and ui_bench.
          const n = trials.size;
          requestAnimationFrame(() => {
            performance.mark('hpo-sweep-rendered');
            document.body.dataset.sweepRendered = String(n);
          });
          await loadCurves();
          if (!disposed) drawCurves();
          return;
        }
      } else if (dirty.size) {
        const ids = [...dirty];
        dirty.clear();
        const ds = await mapLimit(ids, 8, (tid) => api.trial(tid).catch(() => null));
        for (const d of ds) if (d) absorb(d);
      }
      if (disposed) return;
      renderHead();
      table.setTrials([...trials.values()]);
      drawCharts();
      drawPareto();
      loadPareto();
      errorBox.textContent = '';
    } catch (e) {
      errorBox.textContent = e instanceof ApiError && e.status === 404 ? `No sweep ${id}` : `Could not load: ${(e as Error).message}`;
    }
  }, 350);

  const unsub = subscribe((e) => {
    if (e.sweep_id !== id) return;
    if (e.type === 'sweep.stage' || e.type === 'sweep.finished' || (e.type === 'trial.finished' && members.has(e.trial_id))) loadEnsemble();
    if (e.trial_id) {
      if (e.type === 'trial.reported') {
        const c = curves.get(e.trial_id);
        const step = e.data.step;
        if (c && typeof step === 'number') {
          c.reports.push({ step, metrics: (e.data.metrics ?? {}) as Record<string, number>, time_ms: 0 });
          refresh();
          return;
        }
      }
      dirty.add(e.trial_id);
      if (dirty.size > kDirtyLimit) reloadAll = true;
    }
    refresh();
  });
  const onResize = () => {
    history.resize();
    scatter.resize();
    curvesChart.resize();
    pareto.resize();
    drawCharts();
  };
  window.addEventListener('resize', onResize);
  refresh();

  return () => {
    disposed = true;
    unsub();
    window.removeEventListener('resize', onResize);
    history.destroy();
    scatter.destroy();
    curvesChart.destroy();
    pareto.destroy();
    delete document.body.dataset.sweepRendered;
  };
}
