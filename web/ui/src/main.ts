// The dashboard shell: a header (navigation, API token, live status) and a
// hash router (#/, #/sweeps/ID, #/trials/ID, #/workers, #/submit). Hash routes
// keep every URL served by the same index.html. Each page mounts into <main>
// and returns a disposer that drops its event subscriptions and charts.
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { api, ApiError, getToken, onSignInNeeded, setToken } from './api';
import { h, replace } from './dom';
import { onLiveStatus, reconnect } from './live';
import { mountSweeps } from './pages/sweeps';
import { mountSweep } from './pages/sweep';
import { mountTrial } from './pages/trial';
import { mountWorkers } from './pages/workers';
import { mountSubmit } from './pages/submit';

export type Dispose = () => void;

// Who the dashboard reads as: the token's user, "anonymous" without one.
const who = h('span', { class: 'who', id: 'who' }, '');
const signOut = h('button', { type: 'button', class: 'link', id: 'sign-out', hidden: true }, 'Sign out');
const signIn = h('button', { type: 'button', class: 'link', id: 'sign-in-open' }, 'Sign in');

async function showWho(): Promise<void> {
  const me = await api.whoami();
  who.textContent = me.user ?? 'anonymous';
  who.title = Object.entries(me.roles)
    .map(([p, r]) => `${p}: ${r}`)
    .join(', ');
  signOut.hidden = !getToken();
  signIn.textContent = getToken() ? 'Switch user' : 'Sign in';
}

function header(): HTMLElement {
  const status = h('span', { class: 'live', id: 'live-status' }, 'connecting');
  onLiveStatus((s) => {
    status.textContent = s;
    status.className = `live live-${s}`;
  });
  signIn.addEventListener('click', () => showSignIn('Paste an API token (hpo token create prints one).'));
  signOut.addEventListener('click', () => {
    setToken('');
    who.textContent = 'anonymous';
    who.title = '';
    signOut.hidden = true;
    signIn.textContent = 'Sign in';
    reconnect();
    void showWho().catch(() => {});
    route();
  });
  return h(
    'nav',
    { class: 'topnav' },
    h('a', { href: '#/', class: 'brand' }, 'hpo'),
    h('a', { href: '#/' }, 'Sweeps'),
    h('a', { href: '#/workers' }, 'Workers'),
    h('a', { href: '#/submit' }, 'Submit'),
    h('span', { class: 'spacer' }),
    who,
    signIn,
    signOut,
    status,
  );
}

// The sign-in form, in place of the page: shown when a read is refused for
// want of a token (a service with several users), or on "Sign in". The token
// is checked (GET /api/whoami) before it is kept.
let signingIn = false;
function showSignIn(why: string): void {
  if (signingIn) return;
  signingIn = true;
  const app = document.getElementById('app')!;
  dispose?.();
  dispose = null;
  const input = h('input', { id: 'sign-in-token', type: 'password', autocomplete: 'off', placeholder: 'hpo_…', size: 40 });
  const error = h('p', { class: 'error', id: 'sign-in-error' });
  const submit = h('button', { type: 'submit', id: 'sign-in-button' }, 'Sign in');
  // Back to the page (it asks again if it still needs a token).
  const cancel = h('button', { type: 'button', class: 'link', id: 'sign-in-cancel' }, 'Cancel');
  cancel.addEventListener('click', () => {
    signingIn = false;
    route();
  });
  const form = h(
    'form',
    { class: 'sign-in', id: 'sign-in' },
    h('h1', null, 'Sign in'),
    h('p', { class: 'muted' }, why),
    h('label', null, 'API token ', input),
    ' ',
    submit,
    ' ',
    cancel,
    error,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const token = input.value.trim();
    if (!token) return;
    const before = getToken();
    setToken(token);
    submit.disabled = true;
    showWho().then(
      () => {
        signingIn = false;
        reconnect();
        route();
      },
      (err: unknown) => {
        setToken(before);
        submit.disabled = false;
        error.textContent =
          err instanceof ApiError && err.status === 401
            ? 'That token was refused: revoked, mistyped, or not one of this service\'s.'
            : `Could not sign in: ${(err as Error).message}`;
      },
    );
  });
  replace(app, form);
  input.focus();
}
onSignInNeeded((why) => showSignIn(why));

let dispose: Dispose | null = null;

function route(): void {
  if (signingIn) return;
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
// Asks once: a service that needs a token for reads refuses whoami, and the
// sign-in form takes the page's place until a token is accepted.
showWho().then(route, () => {
  if (!signingIn) route();
});
void checkHealth();
setInterval(() => void checkHealth(), 15000);
