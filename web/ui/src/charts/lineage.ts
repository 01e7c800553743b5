// The lineage of a multi-fidelity or PBT sweep on a canvas: every completed
// trial a dot at (its budget, its value), coloured by its PBT member (or its
// Hyperband bracket), joined to the trial it went on from — grey where a
// member continued itself or a rung was promoted, orange and dashed where a
// PBT member exploited another's checkpoint. Read from each trial's `extra`
// (trials/trial_plan.hpp).
import type { Trial } from '../api';
import { fmtNum } from '../dom';

export interface LineageNode {
  number: number;
  budget: number;
  value: number | null;
  parent: number | null;
  exploited: boolean;
  group: number; // PBT member, or Hyperband bracket
  pbt: boolean;
}

export function lineageNodes(trials: Iterable<Trial>): LineageNode[] {
  const out: LineageNode[] = [];
  for (const t of trials) {
    const x = t.extra as Record<string, unknown> | null;
    if (!x || typeof x !== 'object' || typeof x.budget !== 'number') continue;
    const pbt = typeof x.member === 'number';
    out.push({
      number: t.number,
      budget: x.budget,
      value: t.state === 'completed' && t.value !== null && Number.isFinite(t.value) ? t.value : null,
      parent: typeof x.resume_number === 'number' ? x.resume_number : null,
      exploited: x.exploited === true,
      group: pbt ? (x.member as number) : typeof x.bracket === 'number' ? x.bracket : 0,
      pbt,
    });
  }
  return out;
}

export interface LineageSummary {
  trials: number;
  groups: number;
  exploits: number;
  continued: number;
  pbt: boolean;
}

export function drawLineage(canvas: HTMLCanvasElement, nodes: LineageNode[], metric: string): LineageSummary {
  const dpr = window.devicePixelRatio || 1;
  const width = Math.max(320, canvas.parentElement?.clientWidth ?? 600);
  const height = 300;
  canvas.width = Math.floor(width * dpr);
  canvas.height = Math.floor(height * dpr);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext('2d')!;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, width, height);
  const done = nodes.filter((n) => n.value !== null);
  const at = new Map(done.map((n) => [n.number, n]));
  let xMax = 0, yMin = Infinity, yMax = -Infinity;
  for (const n of done) {
    xMax = Math.max(xMax, n.budget);
    yMin = Math.min(yMin, n.value!);
    yMax = Math.max(yMax, n.value!);
  }
  if (!(yMax > yMin)) (yMin -= 0.5), (yMax += 0.5);
  if (!(xMax > 0)) xMax = 1;
  const left = 64, right = width - 16, top = 14, bottom = height - 34;
  const xAt = (b: number) => left + (b / xMax) * (right - left);
  const yAt = (v: number) => bottom - ((v - yMin) / (yMax - yMin)) * (bottom - top);
  const summary: LineageSummary = { trials: done.length, groups: new Set(nodes.map((n) => n.group)).size, exploits: 0, continued: 0, pbt: nodes.some((n) => n.pbt) };
  // Edges first, dots on top.
  ctx.lineWidth = 1;
  for (const exploit of [false, true]) {
    ctx.beginPath();
    for (const n of done) {
      if (n.parent === null || n.exploited !== exploit) continue;
      const p = at.get(n.parent);
      if (!p) continue;
      ctx.moveTo(xAt(p.budget), yAt(p.value!));
      ctx.lineTo(xAt(n.budget), yAt(n.value!));
      if (exploit) summary.exploits++;
      else summary.continued++;
    }
    ctx.strokeStyle = exploit ? 'rgba(234, 88, 12, 0.9)' : 'rgba(100, 116, 139, 0.55)';
    ctx.setLineDash(exploit ? [4, 3] : []);
    ctx.stroke();
  }
  ctx.setLineDash([]);
  for (const n of done) {
    ctx.fillStyle = `hsl(${(n.group * 47) % 360}, 60%, 45%)`;
    ctx.beginPath();
    ctx.arc(xAt(n.budget), yAt(n.value!), done.length > 2000 ? 1.5 : 3, 0, 2 * Math.PI);
    ctx.fill();
  }
  ctx.fillStyle = '#0f172a';
  ctx.strokeStyle = '#334155';
  ctx.font = '11px system-ui, sans-serif';
  ctx.beginPath();
  ctx.moveTo(left, top);
  ctx.lineTo(left, bottom);
  ctx.lineTo(right, bottom);
  ctx.stroke();
  ctx.textAlign = 'center';
  ctx.fillText('budget', (left + right) / 2, height - 6);
  ctx.fillText('0', left, bottom + 14);
  ctx.fillText(fmtNum(xMax, 3), right - 8, bottom + 14);
  ctx.textAlign = 'right';
  ctx.fillText(fmtNum(yMax, 3), left - 4, top + 8);
  ctx.fillText(fmtNum(yMin, 3), left - 4, bottom);
  ctx.save();
  ctx.translate(12, (top + bottom) / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = 'center';
  ctx.fillText(metric, 0, 0);
  ctx.restore();
  if (!done.length) {
    ctx.textAlign = 'center';
    ctx.fillStyle = '#64748b';
    ctx.fillText('no completed trials yet', width / 2, height / 2);
  }
  canvas.dataset.edges = String(summary.exploits + summary.continued);
  return summary;
}
