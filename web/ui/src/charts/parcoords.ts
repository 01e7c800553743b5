// Parallel coordinates on a canvas: one vertical axis per parameter plus the
// objective, one polyline per completed trial, coloured by objective rank
// (dark = better). Canvas rather than SVG so 10,000 lines draw in a frame;
// past kMaxLines, the best lines and an even sample by rank of the others.
import type { Trial } from '../api';
import { fmtNum } from '../dom';
import { argsort, rankSample } from './decimate';

interface Axis {
  name: string;
  categories: string[] | null;
  min: number;
  max: number;
  log: boolean;
  value: (t: Trial) => number | null;
}

function makeAxis(name: string, trials: Trial[], get: (t: Trial) => unknown, logScale: boolean): Axis {
  const raw = trials.map(get);
  const numeric = raw.every((v) => v === undefined || v === null || typeof v === 'number');
  if (!numeric) {
    const cats = [...new Set(raw.filter((v) => v !== undefined && v !== null).map(String))].sort();
    const at = new Map(cats.map((c, i) => [c, i]));
    return { name, categories: cats, min: 0, max: Math.max(1, cats.length - 1), log: false, value: (t) => at.get(String(get(t))) ?? null };
  }
  // A loop, not Math.min(...nums): a spread of 100,000 arguments is slow and
  // past ~120,000 overflows the stack.
  let min = Infinity;
  let max = -Infinity;
  for (const v of raw)
    if (typeof v === 'number' && Number.isFinite(v)) {
      if (v < min) min = v;
      if (v > max) max = v;
    }
  if (min > max) (min = 0), (max = 1);
  if (min === max) (min -= 0.5), (max += 0.5);
  // Log axes for parameters the spec declares log-scaled (learning rates).
  const log = logScale && min > 0;
  return {
    name,
    categories: null,
    min: log ? Math.log10(min) : min,
    max: log ? Math.log10(max) : max,
    log,
    value: (t) => {
      const v = get(t);
      return typeof v === 'number' && Number.isFinite(v) ? (log ? Math.log10(v) : v) : null;
    },
  };
}

// Lines drawn at most: the best kBestLines and an even sample by rank of the
// rest. 100,000 polylines take ~250 ms to stroke and look the same.
export const kMaxLines = 6000;
export const kBestLines = 1000;

// Returns how many lines were drawn of how many completed trials.
export function drawParcoords(canvas: HTMLCanvasElement, trials: Trial[], params: string[], metric: string, maximize: boolean, logParams: Set<string>): { lines: number; trials: number } {
  const done = trials.filter((t) => t.state === 'completed' && t.value !== null && Number.isFinite(t.value));
  const dpr = window.devicePixelRatio || 1;
  const width = Math.max(320, canvas.parentElement?.clientWidth ?? 600);
  const height = 300;
  canvas.width = Math.floor(width * dpr);
  canvas.height = Math.floor(height * dpr);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext('2d')!;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, width, height);
  const axes = [...params.map((p) => makeAxis(p, done, (t) => t.params[p], logParams.has(p))), makeAxis(metric, done, (t) => t.value, false)];
  const top = 28, bottom = height - 30, left = 50, right = width - 60;
  const xAt = (i: number) => (axes.length === 1 ? (left + right) / 2 : left + ((right - left) * i) / (axes.length - 1));
  const yAt = (a: Axis, v: number) => bottom - ((v - a.min) / (a.max - a.min)) * (bottom - top);

  // Worse trials first so the best ones are drawn on top. Lines are grouped
  // into colour buckets by rank and each bucket is stroked as one path, so
  // 10,000 trials cost ~32 stroke calls.
  const byRank = argsort(done.map((t) => (maximize ? t.value! : -t.value!)));
  const order = Array.from(rankSample(byRank.length, kMaxLines, kBestLines), (r) => done[byRank[r]]);
  const n = order.length;
  const kBuckets = 32;
  ctx.lineWidth = n > 2000 ? 0.6 : 1;
  const cols = axes.map((a) => order.map((t) => a.value(t)));
  const strokeRange = (lo: number, hi: number) => {
    ctx.beginPath();
    for (let r = lo; r < hi; r++) {
      let started = false;
      for (let i = 0; i < axes.length; i++) {
        const v = cols[i][r];
        if (v === null) {
          started = false;
          continue;
        }
        const x = xAt(i), y = yAt(axes[i], v);
        if (started) ctx.lineTo(x, y);
        else ctx.moveTo(x, y);
        started = true;
      }
    }
    ctx.stroke();
  };
  for (let b = 0; b < kBuckets; b++) {
    const lo = Math.floor((b * n) / kBuckets), hi = Math.floor(((b + 1) * n) / kBuckets);
    if (hi <= lo) continue;
    const q = (b + 0.5) / kBuckets; // 1 = best
    // Per-line opacity falls with the lines per bucket so dense sweeps stay readable.
    const a = Math.min(0.8, Math.max(0.03, 6 / (hi - lo))) * (0.35 + 0.65 * q);
    ctx.strokeStyle = `hsla(${200 + 30 * q}, ${30 + 55 * q}%, ${75 - 40 * q}%, ${a})`;
    strokeRange(lo, hi);
  }
  // The best trials on top, in orange: ten, or a tenth of a small sweep.
  ctx.lineWidth = 1.5;
  ctx.strokeStyle = 'rgba(234, 88, 12, 0.9)';
  strokeRange(Math.max(0, n - Math.min(10, Math.max(1, Math.floor(n / 10)))), n);

  ctx.strokeStyle = '#334155';
  ctx.fillStyle = '#0f172a';
  ctx.lineWidth = 1;
  ctx.font = '11px system-ui, sans-serif';
  ctx.textAlign = 'center';
  axes.forEach((a, i) => {
    const x = xAt(i);
    ctx.beginPath();
    ctx.moveTo(x, top);
    ctx.lineTo(x, bottom);
    ctx.stroke();
    ctx.fillText(a.name + (a.log ? ' (log)' : ''), x, top - 12);
    const lab = (v: number) => (a.categories ? a.categories[Math.round(v)] ?? '' : fmtNum(a.log ? 10 ** v : v, 3));
    ctx.fillText(lab(a.max), x, top - 1);
    ctx.fillText(lab(a.min), x, bottom + 13);
    if (a.categories && a.categories.length > 2)
      a.categories.forEach((c, ci) => ci > 0 && ci < a.categories!.length - 1 && ctx.fillText(c, x + 18, yAt(a, ci) + 4));
  });
  if (!n) {
    ctx.fillStyle = '#64748b';
    ctx.fillText('no completed trials yet', width / 2, height / 2);
  }
  canvas.dataset.lines = String(n);
  canvas.dataset.trials = String(done.length);
  return { lines: n, trials: done.length };
}
