/**
 * The console's only stylesheet and script, served by the API at /console/assets/ (no CDN, no
 * build step: they are strings bundled with the API). The pages work without the script except for
 * the CSV upload and live progress, which it adds.
 */

export const CONSOLE_CSS = `
:root { --fg: #1b1f24; --muted: #57606a; --bg: #fff; --accent: #0b5cad; --border: #d0d7de; --bad: #a40e26; --ok: #116329; --panel: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header nav { display: flex; flex-wrap: wrap; gap: .25rem 1rem; align-items: center; padding: .6rem 1rem; background: #0d1117; }
header nav a, header nav .who, header nav button.link { color: #f0f6fc; }
header nav .brand { font-weight: 700; margin-right: 1rem; }
header nav .who { margin-left: auto; opacity: .85; }
main { max-width: 70rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.6rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.2rem; margin: 1.5rem 0 .5rem; }
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible { outline: 3px solid #f2a900; outline-offset: 2px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid var(--border); vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.table-wrap { overflow-x: auto; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; word-break: break-all; }
.muted { color: var(--muted); }
.flash { background: #dafbe1; border: 1px solid #4ac26b; padding: .5rem .75rem; border-radius: 6px; }
.error, [role=alert] { color: var(--bad); }
.panel { background: var(--panel); border: 1px solid var(--border); border-radius: 8px; padding: 1rem; margin: 1rem 0; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(18rem, 1fr)); gap: 1rem; }
form.stack { display: grid; gap: .6rem; max-width: 32rem; }
form.inline { display: inline; }
label { font-weight: 600; }
input, select, button { font: inherit; }
input[type=text], input[type=password], input[type=number], input[type=url], input[type=datetime-local], input[type=search], select {
  width: 100%; padding: .45rem .55rem; border: 1px solid #8c959f; border-radius: 6px; }
button, .button { display: inline-block; padding: .45rem .9rem; border-radius: 6px; border: 1px solid #1f6feb; background: #0b5cad; color: #fff; cursor: pointer; text-decoration: none; }
button.secondary, .button.secondary { background: #fff; color: var(--accent); }
button.danger { background: var(--bad); border-color: var(--bad); }
button.link { background: none; border: none; padding: 0; text-decoration: underline; color: inherit; }
.bar { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem; }
meter, progress { width: 14rem; max-width: 100%; height: 1.1rem; }
.chart { width: 100%; height: auto; background: #fff; border: 1px solid var(--border); border-radius: 6px; }
.chart text { font-size: 12px; fill: var(--muted); }
.periods { display: flex; gap: .75rem; margin-bottom: .5rem; }
.periods a[aria-current] { font-weight: 700; text-decoration: none; color: var(--fg); }
.chart .line { fill: none; stroke: var(--accent); stroke-width: 2; vector-effect: non-scaling-stroke; }
.chart .axis { stroke: var(--border); }
.chart.bars rect { fill: var(--accent); }
.key-once { font-size: 1.1rem; padding: .75rem; background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; }
.status-completed { color: var(--ok); }
.status-failed { color: var(--bad); }
@media (max-width: 40rem) {
  th.opt, td.opt { display: none; }
  main { padding: .75rem; }
  h1 { font-size: 1.3rem; }
}
`;

export const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#0b5cad"/><path d="M4 11l4-7 4 7z" fill="#fff"/></svg>';

export const CONSOLE_JS = `
(function () {
  'use strict';
  var csrfMeta = document.querySelector('meta[name="csrf-token"]');
  var csrf = csrfMeta ? csrfMeta.getAttribute('content') : '';

  function fmt(n) { return Number(n).toLocaleString('en-US'); }

  function updateRemaining(quest) {
    if (!quest) return;
    document.querySelectorAll('meter[data-quest="' + quest.id + '"]').forEach(function (m) { m.value = quest.points_remaining; });
    document.querySelectorAll('[data-remaining-of="' + quest.id + '"]').forEach(function (el) { el.textContent = fmt(quest.points_remaining); });
  }

  function watchBatch(row) {
    var url = row.getAttribute('data-batch-url');
    var bar = row.querySelector('progress');
    var text = row.querySelector('[data-batch-text]');
    var status = row.querySelector('[data-batch-status]');
    var failedLink = row.querySelector('[data-failed-link]');
    function tick() {
      fetch(url, { headers: { accept: 'application/json' }, credentials: 'same-origin' })
        .then(function (res) {
          // A refusal (the session ended, the batch is gone) does not get better by asking again.
          if (res.status >= 400 && res.status < 500) {
            row.removeAttribute('data-batch-url');
            text.textContent = res.status === 401 ? 'Your session ended: sign in again to follow this batch.' : 'This batch cannot be followed (HTTP ' + res.status + ').';
            return null;
          }
          if (!res.ok) throw new Error('HTTP ' + res.status);
          return res.json();
        })
        .then(function (body) {
          if (!body) return;
          var b = body.batch;
          bar.max = b.total; bar.value = b.processed;
          text.textContent = fmt(b.processed) + ' of ' + fmt(b.total) + ' processed, ' + fmt(b.succeeded) + ' credited, ' + fmt(b.failed) + ' failed';
          status.textContent = b.status;
          status.className = 'status-' + b.status;
          updateRemaining(body.quest);
          if (b.status === 'completed' || b.status === 'failed') {
            row.removeAttribute('data-batch-url');
            row.setAttribute('data-batch-done', b.status);
            if (failedLink && b.failed > 0) failedLink.hidden = false;
            return;
          }
          setTimeout(tick, 400);
        })
        .catch(function () { setTimeout(tick, 2000); });
    }
    tick();
  }

  document.querySelectorAll('[data-batch-url]').forEach(watchBatch);

  // Irreversible actions ask first (without the script they go ahead: the button says what it does).
  document.querySelectorAll('form[data-confirm]').forEach(function (form) {
    form.addEventListener('submit', function (event) {
      if (!window.confirm(form.getAttribute('data-confirm'))) event.preventDefault();
    });
  });

  // Account import (operator): the file as text/csv, then the counts the server answers.
  var importForm = document.getElementById('import');
  if (importForm) {
    var importInput = importForm.querySelector('input[type=file]');
    var importProgress = document.getElementById('import-progress');
    var importMessage = document.getElementById('import-message');
    importForm.addEventListener('submit', function (event) {
      event.preventDefault();
      var file = importInput.files && importInput.files[0];
      importMessage.textContent = '';
      if (!file) { importMessage.setAttribute('role', 'alert'); importMessage.textContent = 'Choose a file first.'; return; }
      var xhr = new XMLHttpRequest();
      xhr.open('POST', importForm.action);
      xhr.setRequestHeader('content-type', 'text/csv');
      xhr.setRequestHeader('x-csrf-token', csrf);
      xhr.setRequestHeader('accept', 'application/json');
      importProgress.hidden = false; importProgress.value = 0; importProgress.max = file.size || 1;
      xhr.upload.onprogress = function (e) { if (e.lengthComputable) { importProgress.max = e.total; importProgress.value = e.loaded; } };
      xhr.onerror = function () { importMessage.setAttribute('role', 'alert'); importMessage.textContent = 'The upload failed: the server could not be reached.'; };
      xhr.onload = function () {
        var body = null;
        try { body = JSON.parse(xhr.responseText); } catch (e) { body = null; }
        if (xhr.status >= 400 || !body) {
          importMessage.setAttribute('role', 'alert');
          importMessage.textContent = 'The import was refused: ' + (body && body.message ? body.message : 'HTTP ' + xhr.status);
          return;
        }
        importProgress.value = importProgress.max;
        importMessage.setAttribute('role', 'status');
        importMessage.textContent = 'Imported: ' + fmt(body.created) + ' accounts created, ' + fmt(body.skipped) + ' already there, ' + fmt(body.invalid) + ' invalid' +
          (body.invalidRows && body.invalidRows.length ? ' (lines ' + body.invalidRows.map(function (r) { return r.line; }).join(', ') + ')' : '') + '.';
        importForm.reset();
      };
      xhr.send(file);
    });
  }

  var upload = document.getElementById('upload');
  if (upload) {
    var fileInput = upload.querySelector('input[type=file]');
    var progress = document.getElementById('upload-progress');
    var message = document.getElementById('upload-message');
    var list = document.getElementById('batch-rows');
    var template = document.getElementById('batch-row-template');
    upload.addEventListener('submit', function (event) {
      event.preventDefault();
      var file = fileInput.files && fileInput.files[0];
      message.textContent = '';
      message.removeAttribute('role');
      if (!file) { message.setAttribute('role', 'alert'); message.textContent = 'Choose a CSV file first.'; return; }
      var xhr = new XMLHttpRequest();
      xhr.open('POST', upload.action);
      xhr.setRequestHeader('content-type', 'text/csv');
      xhr.setRequestHeader('x-csrf-token', csrf);
      xhr.setRequestHeader('x-upload-id', Date.now().toString(36) + Math.random().toString(36).slice(2));
      xhr.setRequestHeader('accept', 'application/json');
      progress.hidden = false; progress.value = 0; progress.max = file.size || 1;
      xhr.upload.onprogress = function (e) { if (e.lengthComputable) { progress.max = e.total; progress.value = e.loaded; } };
      xhr.onerror = function () { message.setAttribute('role', 'alert'); message.textContent = 'The upload failed: the server could not be reached.'; };
      xhr.onload = function () {
        var body = null;
        try { body = JSON.parse(xhr.responseText); } catch (e) { body = null; }
        if (xhr.status >= 400 || !body || !body.batch) {
          message.setAttribute('role', 'alert');
          message.textContent = 'The upload was refused: ' + (body && body.message ? body.message : 'HTTP ' + xhr.status);
          return;
        }
        progress.value = progress.max;
        message.setAttribute('role', 'status');
        message.textContent = 'Uploaded ' + fmt(body.batch.total) + ' rows as batch ' + body.batch.id + '.';
        var row = template.content.firstElementChild.cloneNode(true);
        row.setAttribute('data-batch-url', body.statusUrl);
        row.querySelector('[data-batch-id]').textContent = body.batch.id;
        row.querySelector('[data-failed-link]').setAttribute('href', body.failedUrl);
        list.insertBefore(row, list.firstChild);
        var empty = document.getElementById('no-batches');
        if (empty) empty.hidden = true;
        watchBatch(row);
        upload.reset();
      };
      xhr.send(file);
    });
  }
})();
`;
