// Tiny DOM helpers. Every piece of data reaches the page through textContent
// or an attribute set with setAttribute (never innerHTML), so a sweep named
// `<img src=x onerror=alert(1)>` shows exactly that string. Styles are only
// set through classes or the CSSOM (el.style.x), which the CSP allows.

export type Child = Node | string | number | null | undefined | false;
export type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs | null = null,
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') {
        el.addEventListener(k.slice(2), v as EventListener);
      } else if (k === 'class') {
        el.className = String(v);
      } else if (k === 'value' && 'value' in el) {
        (el as HTMLInputElement).value = String(v);
      } else {
        el.setAttribute(k, v === true ? '' : String(v));
      }
    }
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: (Child | Child[])[]): void {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
}

export function clear(el: Node): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

export function replace(el: Node, ...children: (Child | Child[])[]): void {
  clear(el);
  append(el, children);
}

export function fmtNum(v: number | null | undefined, digits = 5): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3);
  return String(Number(v.toPrecision(digits)));
}

export function fmtValue(v: unknown): string {
  if (typeof v === 'number') return fmtNum(v);
  if (v === null || v === undefined) return '–';
  return String(v);
}

export function fmtTime(ms: number): string {
  if (!ms) return '–';
  const d = new Date(ms);
  return d.toLocaleString(undefined, { hour12: false });
}

export function fmtDuration(ms: number): string {
  if (!(ms > 0)) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 120) return `${s.toFixed(1)} s`;
  const m = s / 60;
  if (m < 120) return `${m.toFixed(1)} min`;
  return `${(m / 60).toFixed(1)} h`;
}

// A relative time ("12 s ago") that stays current: a local 5 s timer rewrites
// every [data-ago] element from its timestamp (no server requests).
export function agoEl(ms: number): HTMLElement {
  const el = h('span', { 'data-ago': ms, title: ms ? new Date(ms).toISOString() : null }, ago(ms));
  return el;
}
window.setInterval(() => {
  for (const el of document.querySelectorAll<HTMLElement>('[data-ago]')) el.textContent = ago(Number(el.dataset.ago));
}, 5000);

export function ago(ms: number): string {
  if (!ms) return '–';
  const s = Math.max(0, (Date.now() - ms) / 1000);
  if (s < 60) return `${s.toFixed(0)} s ago`;
  if (s < 3600) return `${(s / 60).toFixed(0)} min ago`;
  return `${(s / 3600).toFixed(1)} h ago`;
}

// A state badge: the class carries the colour, the text the state.
export function badge(state: string): HTMLElement {
  return h('span', { class: `badge st-${state.replace(/[^a-z_]/g, '')}` }, state);
}
