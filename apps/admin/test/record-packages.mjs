// Preloaded with `node --import` by startup.test.ts: appends the name of every package a process
// resolves from node_modules (ESM import or require) to the file named by RECORD_PACKAGES.
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const file = process.env.RECORD_PACKAGES;
const seen = new Set();

registerHooks({
  resolve(specifier, context, nextResolve) {
    const result = nextResolve(specifier, context);
    const at = result.url.lastIndexOf('/node_modules/');
    if (file && at !== -1) {
      const parts = result.url.slice(at + '/node_modules/'.length).split('/');
      const name = parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
      if (!seen.has(name)) {
        seen.add(name);
        appendFileSync(file, `${name}\n`);
      }
    }
    return result;
  },
});
