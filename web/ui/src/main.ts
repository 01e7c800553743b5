// The dashboard shell: a header (navigation, API token, live status) and a
// hash router (#/, #/sweeps/ID, #/trials/ID, #/workers, #/submit). Hash routes
// keep every URL served by the same index.html. Each page mounts into <main>
// and returns a disposer that drops its event subscriptions and charts.
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { api, getToken, readsNeedToken, setToken } from './api';
import { h, replace } from './dom';
import { onLiveStatus, reconnect } from './live';
import { mountSweeps } from './pages/sweeps';
import { mountSweep } from './pages/sweep';
import { mountTrial } from './pages/trial';
import { mountWorkers } from './pages/workers';
import { mountSubmit } from './pages/submit';

export type Dispose = () => void;

function header(): HTMLElement {
  const status = h('span', { class: 'live', id: 'live-status' }, 'connecting');
  onLiveStatus((s) => {
    status.textContent = s;
    status.className = `live live-${s}`;
  });
  const token = h('input', {
    id: 'token',
    type: 'password',
    placeholder: 'API token (for submit/cancel)',
    autocomplete: 'off',
    value: getToken(),
  });
  token.addEventListener('change', () => {
    setToken(token.value.trim());
    // A scheduler that guards reads: re-open the stream and the page with the token.
    if (readsNeedToken) {
      reconnect();
      route();
    }
  });
  return h(
    'nav',
    { class: 'topnav' },
    h('a', { href: '#/', class: 'brand' }, 'hpo'),
    h('a', { href: '#/' }, 'Sweeps'),
    h('a', { href: '#/workers' }, 'Workers'),
    h('a', { href: '#/submit' }, 'Submit'),
    h('span', { class: 'spacer' }),
    h('label', { class: 'token' }, 'Token ', token),
    status,
  );
}

let dispose: Dispose | null = null;

function route(): void {
  const app = document.getElementById('app')!;
  dispose?.();
  dispose = null;
  replace(app);
  const hash = location.hash.replace(/^#/, '') || '/';
  const parts = hash.split('/').filter(Boolean).map(decodeURIComponent);
  window.scrollTo(0, 0);
  if (parts.length === 0) dispose = mountSweeps(app);
  else if (parts[0] === 'sweeps' && parts[1]) dispose = mountSweep(app, parts[1]);
  else if (parts[0] === 'trials' && parts[1]) dispose = mountTrial(app, parts[1]);
  else if (parts[0] === 'workers') dispose = mountWorkers(app);
  else if (parts[0] === 'submit') dispose = mountSubmit(app);
  else app.append(h('p', { class: 'error' }, `No page for ${hash}`));
}

// A banner while the service runs degraded (fewer Redis replicas than its
// acknowledged writes wait for), checked every 15 s.
const banner = h('div', { class: 'banner-degraded', id: 'degraded', hidden: true });
async function checkHealth(): Promise<void> {
  try {
    const health = await api.health();
    banner.hidden = health.status !== 'degraded';
    banner.textContent = health.degraded ?? '';
  } catch {
    /* the live status already says when the scheduler is away */
  }
}

replace(document.getElementById('top')!, header(), banner);
window.addEventListener('hashchange', route);
route();
void checkHealth();
setInterval(() => void checkHealth(), 15000);
