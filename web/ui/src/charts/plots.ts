// The uPlot charts of the sweep and trial pages. Each chart object owns one
// uPlot instance; update() swaps its data (setData) and only rebuilds the
// plot when the set of series changes, so live updates stay cheap.
import uPlot from 'uplot';
import type { Trial, Report } from '../api';
import { fmtNum } from '../dom';
import { argsort, occupiedCells, stairCorners } from './decimate';

const kBlue = '#2563eb';
const kOrange = '#ea580c';

function widthOf(el: HTMLElement): number {
  return Math.max(280, Math.floor(el.clientWidth || el.parentElement?.clientWidth || 600) - 4);
}

export class Chart {
  plot: uPlot | null = null;
  private key = '';
  constructor(readonly el: HTMLElement, readonly height = 260) {}

  set(key: string, opts: () => uPlot.Options, data: uPlot.AlignedData): void {
    if (this.plot && key === this.key) {
      this.plot.setData(data);
      return;
    }
    this.destroy();
    this.key = key;
    const o = opts();
    o.width = widthOf(this.el);
    o.height = this.height;
    this.plot = new uPlot(o, data, this.el);
  }
  resize(): void {
    this.plot?.setSize({ width: widthOf(this.el), height: this.height });
  }
  destroy(): void {
    this.plot?.destroy();
    this.plot = null;
    this.key = '';
  }
}

const pointsOnly = (): null => null;

// Scatter series for big sweeps: one Path2D of small squares, filled once.
// uPlot's own points are arcs stroked and filled one by one, which costs
// ~100 ms per chart at 10,000 points; this draws the same in a few ms. Past
// kThinAbove points in view, one square per square-sized cell of the plot
// (snapped to it): a dense region is drawn once instead of thousands of times.
const kThinAbove = 4000;

function squares(sizeCssPx: number): uPlot.Series.PathBuilder {
  return (u, seriesIdx, idx0, idx1) => {
    const s = sizeCssPx * uPlot.pxRatio;
    const path = new Path2D();
    const xs = u.data[0] as number[];
    const ys = u.data[seriesIdx] as (number | null)[];
    const px: number[] = [];
    const py: number[] = [];
    for (let i = idx0; i <= idx1; i++) {
      const y = ys[i];
      if (y === null || y === undefined) continue;
      px.push(u.valToPos(xs[i], 'x', true) - s / 2);
      py.push(u.valToPos(y, 'y', true) - s / 2);
    }
    if (px.length > kThinAbove) {
      const c = occupiedCells(px, py, s);
      for (let i = 0; i < c.x.length; i++) path.rect(c.x[i], c.y[i], s, s);
    } else {
      for (let i = 0; i < px.length; i++) path.rect(px[i], py[i], s, s);
    }
    return { stroke: path, fill: path, clip: undefined, flags: 0 } as unknown as uPlot.Series.Paths;
  };
}

// Points-only series: uPlot's circles for small sweeps, squares for big ones.
function dots(label: string, size: number, big: boolean): uPlot.Series {
  return big
    ? { label, stroke: kBlue, fill: 'rgba(37,99,235,0.7)', width: 0, paths: squares(size), points: { show: false } }
    : { label, stroke: kBlue, width: 0, paths: pointsOnly, points: { show: true, size, fill: kBlue } };
}

// Objective per trial number, with the best-so-far line (its corners only
// for a big sweep: the same staircase from a few points).
export function historyData(trials: Trial[], maximize: boolean, big = false): uPlot.AlignedData {
  const sorted = trials.slice().sort((a, b) => a.number - b.number);
  const xs: number[] = [];
  const ys: (number | null)[] = [];
  const best: (number | null)[] = [];
  let b: number | null = null;
  for (const t of sorted) {
    const v = t.state === 'completed' && t.value !== null && Number.isFinite(t.value) ? t.value : null;
    if (v !== null && (b === null || (maximize ? v > b : v < b))) b = v;
    xs.push(t.number);
    ys.push(v);
    best.push(b);
  }
  return [xs, ys, big ? stairCorners(best) : best];
}

export function historyOptions(metric: string, big = false): () => uPlot.Options {
  return () => ({
    width: 600,
    height: 260,
    scales: { x: { time: false } },
    axes: [{ label: 'trial number' }, { label: metric, size: 60 }],
    series: [
      { label: 'trial' },
      dots(metric, big ? 2.5 : 5, big),
      { label: 'best so far', stroke: kOrange, width: 2, spanGaps: true, paths: uPlot.paths.stepped!({ align: 1 }), points: { show: false }, value: big ? lastCorner : undefined },
    ],
    legend: { show: true },
  });
}

// The legend's best so far under the cursor when only the corners are kept:
// the last corner at or before it.
function lastCorner(u: uPlot, _v: number | null, si: number, idx: number | null): string {
  const d = u.data[si];
  for (let i = idx ?? -1; i >= 0; i--) {
    const v = d[i];
    if (v !== null && v !== undefined) return fmtNum(v);
  }
  return '–';
}

// Objective against one parameter (categories are placed at their index).
export function scatterData(trials: Trial[], param: string): { data: uPlot.AlignedData; categories: string[] | null } {
  const cats = new Map<string, number>();
  let numeric = true;
  for (const t of trials) {
    const p = t.params[param];
    if (p !== undefined && p !== null && typeof p !== 'number') numeric = false;
  }
  const px: number[] = [];
  const py: number[] = [];
  for (const t of trials) {
    if (t.state !== 'completed' || t.value === null || !Number.isFinite(t.value)) continue;
    const p = t.params[param];
    if (p === undefined || p === null) continue;
    let x: number;
    if (numeric) x = p as number;
    else {
      const k = String(p);
      if (!cats.has(k)) cats.set(k, cats.size);
      x = cats.get(k)!;
    }
    px.push(x);
    py.push(t.value);
  }
  // uPlot wants x ascending.
  const order = argsort(px);
  const xs = new Array<number>(order.length);
  const ys = new Array<number>(order.length);
  for (let i = 0; i < order.length; i++) (xs[i] = px[order[i]]), (ys[i] = py[order[i]]);
  return { data: [xs, ys], categories: numeric ? null : [...cats.keys()] };
}

export function scatterOptions(param: string, metric: string, categories: string[] | null, big = false): () => uPlot.Options {
  return () => ({
    width: 600,
    height: 260,
    scales: { x: { time: false } },
    axes: [
      categories
        ? { label: param, values: (_u, splits) => splits.map((v) => (Number.isInteger(v) ? categories[v] ?? '' : '')) }
        : { label: param },
      { label: metric, size: 60 },
    ],
    series: [{ label: param }, dots(metric, big ? 2.5 : 6, big)],
  });
}

// Two objectives of a sweep with several: every completed trial (blue) and
// the Pareto front (orange; joined as a staircase when there are only two
// objectives, where the projection is the front itself). x ascending, one y
// column per series, null where a trial is not in it.
export function paretoData(trials: Trial[], front: Set<number>, x: string, y: string): uPlot.AlignedData {
  const pts: { x: number; y: number; on: boolean }[] = [];
  for (const t of trials) {
    if (t.state !== 'completed') continue;
    const vx = t.metrics[x];
    const vy = t.metrics[y];
    if (typeof vx !== 'number' || typeof vy !== 'number' || !Number.isFinite(vx) || !Number.isFinite(vy)) continue;
    pts.push({ x: vx, y: vy, on: front.has(t.number) });
  }
  pts.sort((a, b) => a.x - b.x);
  return [pts.map((p) => p.x), pts.map((p) => (p.on ? null : p.y)), pts.map((p) => (p.on ? p.y : null))];
}

export function paretoOptions(x: string, y: string, staircase: boolean, big = false): () => uPlot.Options {
  return () => ({
    width: 600,
    height: 300,
    scales: { x: { time: false } },
    axes: [{ label: x }, { label: y, size: 60 }],
    series: [
      { label: x },
      dots('dominated', big ? 2.5 : 5, big),
      {
        label: 'Pareto front',
        stroke: kOrange,
        width: staircase ? 1.5 : 0,
        spanGaps: true,
        paths: staircase ? uPlot.paths.stepped!({ align: 1 }) : pointsOnly,
        points: { show: true, size: 8, fill: kOrange, stroke: kOrange },
      },
    ],
  });
}

export interface CurveTrial {
  number: number;
  state: string;
  reports: Report[];
}

// Intermediate values: one series per trial on the union of steps. Pruned
// trials are drawn red and dashed with a marker at the step they stopped.
export function curvesData(trials: CurveTrial[], metric: string): uPlot.AlignedData {
  const steps = new Set<number>();
  for (const t of trials) for (const r of t.reports) if (typeof r.metrics[metric] === 'number') steps.add(r.step);
  const xs = [...steps].sort((a, b) => a - b);
  const at = new Map(xs.map((s, i) => [s, i]));
  const data: (number | null)[][] = [];
  for (const t of trials) {
    const ys = new Array<number | null>(xs.length).fill(null);
    for (const r of t.reports) {
      const v = r.metrics[metric];
      if (typeof v === 'number') ys[at.get(r.step)!] = v;
    }
    data.push(ys);
  }
  return [xs, ...data] as uPlot.AlignedData;
}

export function curvesOptions(trials: CurveTrial[], metric: string): () => uPlot.Options {
  return () => ({
    width: 600,
    height: 260,
    scales: { x: { time: false } },
    axes: [{ label: 'step' }, { label: metric, size: 60 }],
    legend: { show: false },
    series: [
      { label: 'step' },
      ...trials.map((t): uPlot.Series => {
        const pruned = t.state === 'pruned';
        const last = t.reports.length ? t.reports[t.reports.length - 1].step : -1;
        return {
          label: `#${t.number} ${t.state}`,
          stroke: pruned ? 'rgba(220,38,38,0.85)' : t.state === 'running' ? 'rgba(22,163,74,0.9)' : 'rgba(37,99,235,0.45)',
          width: pruned ? 1.5 : 1,
          dash: pruned ? [5, 4] : undefined,
          spanGaps: true,
          points: pruned
            ? { show: true, size: 7, stroke: '#dc2626', fill: '#fff', filter: (u: uPlot, si: number) => lastIndex(u, si, last) }
            : { show: false },
        } as uPlot.Series;
      }),
    ],
  });
}

function lastIndex(u: uPlot, _si: number, lastStep: number): number[] | null {
  const i = (u.data[0] as number[]).indexOf(lastStep);
  return i >= 0 ? [i] : null;
}

// Curves of one trial (trial page): one series per metric.
export function trialCurveData(reports: Report[]): { data: uPlot.AlignedData; metrics: string[] } {
  const metrics = [...new Set(reports.flatMap((r) => Object.keys(r.metrics)))].sort();
  const sorted = reports.slice().sort((a, b) => a.step - b.step);
  return {
    data: [sorted.map((r) => r.step), ...metrics.map((m) => sorted.map((r) => (typeof r.metrics[m] === 'number' ? r.metrics[m] : null)))] as uPlot.AlignedData,
    metrics,
  };
}

const kPalette = ['#2563eb', '#ea580c', '#16a34a', '#9333ea', '#dc2626', '#0891b2', '#ca8a04'];

export function trialCurveOptions(metrics: string[]): () => uPlot.Options {
  return () => ({
    width: 600,
    height: 260,
    scales: { x: { time: false } },
    axes: [{ label: 'step' }, { size: 60 }],
    series: [{ label: 'step' }, ...metrics.map((m, i) => ({ label: m, stroke: kPalette[i % kPalette.length], width: 1.5, spanGaps: true }))],
  });
}
