// Submit a sweep: a JSON editor prefilled with an example. A 400 answer's
// field errors are listed next to the editor, each with its JSON path and the
// line of the editor where that path's key is (clicking selects the line).
import { api, ApiError, FieldError, getToken, setToken } from '../api';
import { h, replace } from '../dom';

export const kExampleSpec = `{
  "name": "branin-demo",
  "objective": {"metric": "value", "mode": "min"},
  "parameters": {
    "x1": {"type": "float", "min": -5, "max": 10},
    "x2": {"type": "float", "min": 0, "max": 15}
  },
  "search": {"algorithm": "tpe", "max_trials": 40, "max_concurrent": 4, "seed": 1},
  "early_stopping": {"type": "median", "warmup_steps": 2, "min_trials": 4},
  "trial": {"kind": "synthetic", "function": "branin", "sleep_s": 0.5, "steps": 10}
}
`;

// The 1-based line of the editor text where the last key of `path` appears
// as an object key (best effort: the first "key": after the parent's key).
export function lineOfPath(text: string, path: string): number | null {
  if (!path) return null;
  const keys = path.split('.').filter((k) => !/^\d+$/.test(k) && !/^\[\d+\]$/.test(k)).map((k) => k.replace(/\[\d+\]$/, ''));
  let from = 0;
  let found = -1;
  for (const k of keys) {
    const at = text.indexOf(JSON.stringify(k) + ':', from) >= 0 ? text.indexOf(JSON.stringify(k) + ':', from) : text.indexOf(JSON.stringify(k), from);
    if (at < 0) break;
    found = at;
    from = at + 1;
  }
  if (found < 0) return null;
  return text.slice(0, found).split('\n').length;
}

export function mountSubmit(root: HTMLElement): () => void {
  const editor = h('textarea', { id: 'spec-editor', spellcheck: 'false', rows: 22, 'aria-label': 'sweep spec (JSON)' });
  editor.value = kExampleSpec;
  const token = h('input', { id: 'submit-token', type: 'password', placeholder: 'API token', autocomplete: 'off', value: getToken() });
  const button = h('button', { id: 'submit-spec', type: 'button', class: 'primary' }, 'Submit sweep');
  // The projects the caller may submit to (member or admin).
  const project = h('select', { id: 'submit-project', 'aria-label': 'project' }, h('option', { value: 'default' }, 'default')) as HTMLSelectElement;
  api
    .projects()
    .then(({ projects }) => {
      const mine = projects.filter((p) => p.role === 'member' || p.role === 'admin');
      if (mine.length) replace(project, ...mine.map((p) => h('option', { value: p.name }, p.name)));
      if (mine.some((p) => p.name === 'default')) project.value = 'default';
    })
    .catch(() => {
      /* no token yet: the default project */
    });
  const result = h('div', { id: 'submit-result' });
  const errors = h('ul', { id: 'field-errors', class: 'field-errors' });
  const gutter = h('div', { class: 'gutter', 'aria-hidden': 'true' });

  function selectLine(line: number): void {
    const lines = editor.value.split('\n');
    const start = lines.slice(0, line - 1).reduce((a, l) => a + l.length + 1, 0);
    editor.focus();
    editor.setSelectionRange(start, start + (lines[line - 1]?.length ?? 0));
  }

  function drawGutter(marks: Map<number, string>): void {
    const n = editor.value.split('\n').length;
    replace(
      gutter,
      Array.from({ length: n }, (_, i) => h('div', { class: marks.has(i + 1) ? 'ln mark' : 'ln', title: marks.get(i + 1) ?? null }, marks.has(i + 1) ? `! ${i + 1}` : String(i + 1))),
    );
    gutter.scrollTop = editor.scrollTop;
  }

  function showErrors(fields: FieldError[], message: string): void {
    const marks = new Map<number, string>();
    replace(result, h('p', { class: 'error', id: 'submit-error' }, message));
    replace(
      errors,
      fields.map((f) => {
        const line = lineOfPath(editor.value, f.path);
        if (line) marks.set(line, `${f.path}: ${f.message}`);
        const li = h(
          'li',
          { class: 'field-error', 'data-path': f.path },
          h('code', { class: 'path' }, f.path || '(spec)'),
          line ? h('span', { class: 'line' }, ` line ${line}`) : null,
          ' ',
          h('span', { class: 'msg' }, f.message),
        );
        if (line) li.addEventListener('click', () => selectLine(line));
        return li;
      }),
    );
    drawGutter(marks);
  }

  editor.addEventListener('input', () => drawGutter(new Map()));
  editor.addEventListener('scroll', () => (gutter.scrollTop = editor.scrollTop));
  token.addEventListener('change', () => {
    setToken(token.value.trim());
    const top = document.getElementById('token') as HTMLInputElement | null;
    if (top) top.value = token.value.trim();
  });
  button.addEventListener('click', async () => {
    setToken(token.value.trim() || getToken());
    button.disabled = true;
    replace(errors);
    replace(result, h('p', { class: 'muted' }, 'Submitting…'));
    try {
      const { id } = await api.submit(editor.value, project.value);
      drawGutter(new Map());
      replace(result, h('p', { class: 'ok', id: 'submit-ok' }, 'Created sweep ', h('a', { href: `#/sweeps/${encodeURIComponent(id)}` }, id)));
    } catch (e) {
      if (e instanceof ApiError) {
        const msg = e.status === 401 ? 'Submitting needs the API token (the scheduler prints it; it is also in $HPO_HOME/scheduler.json).' : e.message;
        showErrors(e.fields, msg);
      } else {
        showErrors([], `Request failed: ${(e as Error).message}`);
      }
    } finally {
      button.disabled = false;
    }
  });

  root.append(
    h('h1', null, 'Submit a sweep'),
    h('p', { class: 'muted' }, 'Edit the spec (JSON) and submit. Problems are listed with their JSON path and marked in the line gutter.'),
    h('div', { class: 'submit-grid' }, h('div', { class: 'editor' }, gutter, editor), h('div', { class: 'side' }, h('label', null, 'Token ', token), h('label', null, 'Project ', project), button, result, errors)),
  );
  drawGutter(new Map());
  return () => {};
}
