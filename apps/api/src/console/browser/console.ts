/**
 * The console's script (served bundled, as /console/assets/console.js): live batch progress, the
 * file uploads, and a question before irreversible actions. Every page works without it except
 * the uploads and the live progress.
 */
import { watchBatch } from './batches.ts';
import { byId } from './format.ts';
import { accountImport, creditUpload } from './uploads.ts';

for (const row of document.querySelectorAll<HTMLElement>('[data-batch-url]')) watchBatch(row);

// Irreversible actions ask first (without the script they go ahead: the button says what it does).
for (const form of document.querySelectorAll<HTMLFormElement>('form[data-confirm]')) {
  form.addEventListener('submit', (event) => {
    if (!window.confirm(form.getAttribute('data-confirm') ?? '')) event.preventDefault();
  });
}

const importForm = byId('import', HTMLFormElement);
if (importForm) accountImport(importForm);
const uploadForm = byId('upload', HTMLFormElement);
if (uploadForm) creditUpload(uploadForm);
