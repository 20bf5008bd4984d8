import { watchBatch } from './batches.ts';
import { byId, fmt, part, when } from './format.ts';

interface Refusal {
  message?: string;
}

/**
 * Send a form's file as text/csv with the CSRF token, showing the upload's progress, then hand
 * the JSON answer on; a refusal or a network failure is said in `message` (role alert).
 */
function sendFile<T>(
  form: HTMLFormElement,
  opts: {
    progress: HTMLProgressElement;
    message: HTMLElement;
    what: string;
    choose: string;
    /** Headers of each upload (evaluated per upload). */
    headers?: () => Record<string, string>;
  },
  onAnswer: (body: T) => void,
): void {
  const { progress, message, what } = opts;
  const input = part(form, 'input[type=file]', HTMLInputElement);
  const alert = (text: string) => {
    message.setAttribute('role', 'alert');
    message.textContent = text;
  };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const file = input.files?.[0];
    message.textContent = '';
    message.removeAttribute('role');
    if (!file) return alert(opts.choose);
    const xhr = new XMLHttpRequest();
    xhr.open('POST', form.action);
    xhr.setRequestHeader('content-type', 'text/csv');
    xhr.setRequestHeader('x-csrf-token', document.querySelector('meta[name="csrf-token"]')?.getAttribute('content') ?? '');
    xhr.setRequestHeader('accept', 'application/json');
    for (const [name, value] of Object.entries(opts.headers?.() ?? {})) xhr.setRequestHeader(name, value);
    progress.hidden = false;
    progress.value = 0;
    progress.max = file.size || 1;
    xhr.upload.onprogress = (e) => {
      if (!e.lengthComputable) return;
      progress.max = e.total;
      progress.value = e.loaded;
    };
    xhr.onerror = () => alert(`The ${what} failed: the server could not be reached.`);
    xhr.onload = () => {
      let body: (T & Refusal) | null = null;
      try {
        body = JSON.parse(xhr.responseText) as T & Refusal;
      } catch {
        body = null;
      }
      if (xhr.status >= 400 || !body) return alert(`The ${what} was refused: ${body?.message ?? `HTTP ${xhr.status}`}`);
      progress.value = progress.max;
      message.setAttribute('role', 'status');
      onAnswer(body);
      form.reset();
    };
    xhr.send(file);
  });
}

interface ImportAnswer {
  created: number;
  skipped: number;
  invalid: number;
  invalidRows?: { line: number }[];
}

/** The operator's account import: the counts the server answers. */
export function accountImport(form: HTMLFormElement): void {
  const progress = byId('import-progress', HTMLProgressElement);
  const message = byId('import-message', HTMLElement);
  if (!progress || !message) return;
  sendFile<ImportAnswer>(form, { progress, message, what: 'import', choose: 'Choose a file first.' }, (body) => {
    const lines = body.invalidRows?.length ? ` (lines ${body.invalidRows.map((r) => r.line).join(', ')})` : '';
    message.textContent = `Imported: ${fmt(body.created)} accounts created, ${fmt(body.skipped)} already there, ${fmt(body.invalid)} invalid${lines}.`;
  });
}

interface UploadAnswer {
  batch: { id: string; total: number; created_at: string };
  statusUrl: string;
  failedUrl: string;
}

/** A quest's CSV upload: the new batch's row at the top of the table, followed until it ends. */
export function creditUpload(form: HTMLFormElement): void {
  const progress = byId('upload-progress', HTMLProgressElement);
  const message = byId('upload-message', HTMLElement);
  const list = byId('batch-rows', HTMLElement);
  const template = byId('batch-row-template', HTMLTemplateElement);
  if (!progress || !message || !list || !template) return;
  // Each upload its own idempotency key: a retried request of one upload is not credited twice.
  const headers = () => ({ 'x-upload-id': Date.now().toString(36) + Math.random().toString(36).slice(2) });
  const opts = { progress, message, what: 'upload', choose: 'Choose a CSV file first.', headers };
  sendFile<UploadAnswer>(form, opts, (body) => {
    message.textContent = `Uploaded ${fmt(body.batch.total)} rows as batch ${body.batch.id}.`;
    const row = template.content.firstElementChild?.cloneNode(true);
    if (!(row instanceof HTMLElement)) return;
    row.setAttribute('data-batch-url', body.statusUrl);
    part(row, '[data-batch-id]', HTMLElement).textContent = body.batch.id;
    part(row, '[data-batch-created]', HTMLElement).textContent = when(body.batch.created_at);
    part(row, '[data-failed-link]', HTMLAnchorElement).href = body.failedUrl;
    list.insertBefore(row, list.firstChild);
    const empty = document.getElementById('no-batches');
    if (empty) empty.hidden = true;
    watchBatch(row);
  });
}
