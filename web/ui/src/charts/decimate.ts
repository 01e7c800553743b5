// What the charts of a big sweep draw. Every trial is still in the table and
// in the best-so-far line and the axes' ranges; what is reduced is the number
// of marks a canvas rasterises and the work per trial, which for 100,000
// trials is what a first render spends its time on:
//   - scatter markers: one per marker-sized cell of the plot (snapped to the
//     cell), so a dense region is drawn once and an isolated point moves by
//     at most half a marker;
//   - the best-so-far staircase: its corners only (lossless);
//   - parallel coordinates: the best lines and an even sample by rank of the
//     rest (the colour by rank keeps its distribution), said under the chart;
//   - importance: an even sample of the completed trials (said under it).
// Pure functions, unit-tested in tests/browser/ui_unit.mjs.

// Positions 0..n-1 ordered by `values` ascending, ties by position.
export function argsort(values: ArrayLike<number>): Uint32Array {
  const idx = new Uint32Array(values.length);
  for (let i = 0; i < idx.length; i++) idx[i] = i;
  return idx.sort((a, b) => values[a] - values[b] || a - b);
}

// Up to `max` of the positions 0..n-1, spread evenly and ascending; all of
// them when n <= max.
export function evenSample(n: number, max: number): Uint32Array {
  const k = Math.max(0, Math.min(n, Math.floor(max)));
  const out = new Uint32Array(k);
  for (let i = 0; i < k; i++) out[i] = Math.floor((i * n) / k);
  return out;
}

// Of n items ordered worst to best, the positions to draw (ascending): all of
// them when n <= budget, else the best `keepBest` and an even sample of the
// others to make up the budget.
export function rankSample(n: number, budget: number, keepBest: number): Uint32Array {
  if (n <= budget) return evenSample(n, n);
  const best = Math.min(keepBest, budget);
  const rest = evenSample(n - best, budget - best);
  const out = new Uint32Array(budget);
  out.set(rest);
  for (let i = 0; i < best; i++) out[rest.length + i] = n - best + i;
  return out;
}

// Points (device pixels) thinned to one per node of a grid of pitch `cell`:
// each point snaps to its nearest node (moving at most cell/2 on each axis),
// and the nodes that hold at least one point come back once each, in the
// order first seen. Non-finite coordinates are skipped.
export function occupiedCells(xs: ArrayLike<number>, ys: ArrayLike<number>, cell: number): { x: Float64Array; y: Float64Array } {
  const seen = new Set<number>();
  const cx: number[] = [];
  const cy: number[] = [];
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i], y = ys[i];
    if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
    const gx = Math.round(x / cell), gy = Math.round(y / cell);
    // Cells of a plot are far fewer than 2^21 per axis; negative ones (out of
    // the plot) keep distinct keys too.
    const key = (gx + 0x100000) * 0x200000 + (gy + 0x100000);
    if (seen.has(key)) continue;
    seen.add(key);
    cx.push(gx * cell);
    cy.push(gy * cell);
  }
  return { x: Float64Array.from(cx), y: Float64Array.from(cy) };
}

// The corners of a staircase: positions where the value differs from the one
// before (nulls skipped), and the last non-null position so the line reaches
// the end. Everything else set to null draws the same stepped line.
export function stairCorners(ys: (number | null)[]): (number | null)[] {
  const out = new Array<number | null>(ys.length).fill(null);
  let prev: number | null = null;
  let last = -1;
  for (let i = 0; i < ys.length; i++) {
    const y = ys[i];
    if (y === null) continue;
    if (y !== prev) out[i] = y;
    prev = y;
    last = i;
  }
  if (last >= 0) out[last] = ys[last];
  return out;
}
